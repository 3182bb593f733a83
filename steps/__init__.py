"""Install steps as pure declarations over HostFacts (gpuwizard.steps).

Each step says what it would change and why; the runner applies it. Steps never read the
machine: a step that needs to know something asks for a new fact.
"""
