"""KeyFooter: the footer that shows only whole keys, as many as fit on one line.

Textual's Footer lays every key out in a row and lets the terminal cut the last ones in half.
This one keeps the keys that matter most (help and quit always, then the view's own keys in the
order it declares them, the doctor last) and leaves out, whole, those that do not fit. It must
never show a key the view cannot act on: views hide those with ``check_action``.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gpuwizard.screens.keymap import ALWAYS_SHOWN, SHOWN_AT_THE_END, SHOWN_LAST


def key_width(key_display: str, description: str) -> int:
    """Cells one FooterKey takes: the key padded by one on each side, the description and one."""
    return Text(key_display).cell_len + 2 + (Text(description).cell_len + 1 if description else 0)


def rank(binding: Binding, order: int) -> tuple[int, int]:
    if binding.action in ALWAYS_SHOWN:
        return (0, order)
    if binding.action in SHOWN_LAST:
        return (2, order)
    return (1, order)


def fitting(keys: list[tuple[Binding, str, int]], width: int) -> set[int]:
    """The positions of the keys that fit in ``width``, most important first."""
    kept: set[int] = set()
    used = 0
    ordered = sorted(range(len(keys)), key=lambda i: rank(keys[i][0], i))
    for i in ordered:
        binding, _shown, cells = keys[i]
        if used + cells > width and binding.action not in ALWAYS_SHOWN:
            continue
        kept.add(i)
        used += cells
    return kept


class KeyFooter(Footer):
    def __init__(self) -> None:
        super().__init__(show_command_palette=False)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        seen: set[str] = set()
        keys: list[tuple[Binding, str, int]] = []
        enabled: list[bool] = []
        for _, binding, active, _tip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            shown = self.app.get_key_display(binding)
            keys.append((binding, shown, key_width(shown, binding.description)))
            enabled.append(active)
        kept = fitting(keys, self.app.size.width)
        for i in sorted(kept, key=lambda i: (keys[i][0].action in SHOWN_AT_THE_END, i)):
            binding, shown, _cells = keys[i]
            yield FooterKey(
                binding.key, shown, binding.description, binding.action, disabled=not enabled[i]
            ).data_bind(compact=Footer.compact)

    def on_resize(self, _event: Resize) -> None:
        self.call_after_refresh(self.recompose)
