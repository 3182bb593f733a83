"""Pure values: the facts about a machine, the plan and its typed operations, versions, pins,
the GPU catalogue, known errors, and the codec that reads them back from JSON and YAML.

Everything else in gpuwizard builds on these. They must never do I/O beyond reading their own
data files beside them, never import another gpuwizard package, Textual, subprocess or NVML.
"""
