"""Widgets shared by the screens: the live log pane and the step list."""
