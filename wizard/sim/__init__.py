"""The simulated host: built-in recorded profiles that stand in for a real server.

Only the CLI may use this package (import contract): production code sees an ordinary ``Host``.
"""
