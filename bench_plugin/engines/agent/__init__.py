"""Running an agent task: the workspace, the tools, carrying out each call, and how the run reads to a judge."""
