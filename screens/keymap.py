"""The wizard's one key map: which key means what on every stage view, documented once.

Every stage view inherits the common keys (help, doctor, quit) from ``StageView``; a view binds
only the keys of this map whose meaning it has. The help screen shows this map, and the footer
ranks keys by it when the terminal is too narrow for all of them. It must never give one key two
meanings on different views.
"""

from __future__ import annotations

KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "continue · run the next step · begin the benchmark"),
    ("c", "continue where a list takes Enter (choices, export)"),
    ("esc / b", "back (reboot view, benchmark: later)"),
    ("a", "run all remaining steps without asking each time"),
    ("s", "skip a step, or the benchmark"),
    ("r", "retry a failed step · reboot now · benchmark again"),
    (
        "x",
        "abort the install between steps · cancel a step that waits for you · stop the benchmark",
    ),
    ("w", "why not the others (choices) · write files (export)"),
    ("l · f", "log: wrap or scroll long lines · follow the end or not"),
    ("↑ ↓ · End", "log: scroll (up stops following) · the end, followed again"),
    ("tab", "the next box with more to scroll (its border lights up)"),
    ("/ · n", "find a word in the log · find the next match"),
    ("d", "doctor: known problems with driver, CUDA, Secure Boot"),
    ("q", "quit; asks while a step runs (it goes on without you)"),
    ("? / F1", "this help, on every view · ctrl+p: command palette"),
)

ALWAYS_SHOWN = frozenset({"app.help", "app.quit_wizard", "quit_screen", "finish", "leave"})
"""Actions the footer keeps however narrow it is: how to get help and how to leave."""

SHOWN_LAST = ("app.doctor",)
"""Actions the footer drops first when keys do not fit (they stay in the help screen)."""

SHOWN_AT_THE_END = frozenset({"app.help", "app.doctor", "app.quit_wizard"})
"""The keys every view shares come after the view's own keys, in this order of binding."""
