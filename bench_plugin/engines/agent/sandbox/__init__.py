"""Where agent commands run: bubblewrap, a container engine, or (asked for explicitly) no sandbox at all."""
