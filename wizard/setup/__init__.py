"""The application core: what a person asked for, what is on disk, and the one state machine
both front ends (the TUI and ``gpuwizard apply``) follow. Never imports Textual."""
