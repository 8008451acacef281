"""Tool-using agents at run time: the workspace, the tools, and the log of what the agent did."""
