"""The runner: a detached process that applies a reviewed plan, step by step, and survives the
TUI exiting, the SSH link dropping and the reboots it asks for. It never decides what to run."""
