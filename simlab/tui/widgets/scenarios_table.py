"""The scenarios of a run: pass^1..k, class, invalid and error counts (or, ungraded, how
the trials ended)."""

from __future__ import annotations

from rich.text import Text

from simlab.report.fmt import DASH, num
from simlab.transcript.verdicts import CLASSES
from simlab.tui.render import literal, reason_text
from simlab.tui.summary import ScenarioProgress, k_columns
from simlab.tui.widgets.keyed_table import KeyedTable

__all__ = ["ScenariosTable", "flake_text"]


def flake_text(flake: str | None) -> Text:
    """A scenario's class as every surface names it (``verdicts.CLASSES``)."""
    info = CLASSES.get(flake or "")
    return Text(info.label, style=info.style) if info else Text("—", style="dim")


def _num(value: int, style: str = "") -> Text:
    return Text(str(value), justify="right", style=style if value else "dim")


def _trials(s: ScenarioProgress) -> Text:
    done = f"{s.trials}/{s.planned}" if s.planned and s.trials != s.planned else str(s.trials)
    return Text(done, justify="right")


class ScenariosTable(KeyedTable):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._layout: tuple[object, ...] = ()

    def fill(
        self, summaries: list[ScenarioProgress], graded: bool, k_limit: int = 4, k: int | None = None
    ) -> None:
        """Replace the rows (and the columns when the k's or the graded layout changed). ``k``:
        the screen's one k (its column stays while trials arrive); None: the largest defined."""
        if graded and k:  # the columns follow the plan, not the trials that arrived: they stay put
            top = max((s.planned or s.valid_n for s in summaries), default=k)
            ks = sorted({*range(1, min(top, k_limit) + 1), top, k})
        else:
            ks = k_columns(summaries, k_limit) if graded else []
        layout = (graded, tuple(ks))
        current = self.current_key()
        if layout != self._layout:
            self.clear(columns=True)
            self._layout = layout
            self.add_column("scenario", key="scenario")
            self.add_column("n", key="trials")
            if graded:
                self.add_column("pass", key="pass")
                for k in ks:
                    self.add_column(f"^{k}", key=f"k{k}")
                for label, name in (
                    ("class", "flake"),
                    ("inv", "inv"),
                    ("err", "err"),
                ):  # class: verdicts.CLASSES
                    self.add_column(label, key=name)
            else:
                self.add_column("goal", key="goal")
                self.add_column("ended (not graded)", key="ended")
        else:
            self.clear()
        for s in summaries:
            name = s.scenario_id if len(s.scenario_id) <= 30 else s.scenario_id[:29] + "…"
            cells: list[object] = [literal(name), _trials(s)]
            if graded:
                figures = s.figures(ks)  # the report's own figures of this scenario
                cells.append(Text(f"{s.passed}/{s.graded}" if s.graded else DASH, justify="right"))
                cells += [
                    Text(num(figures.valid.pass_k[k].pass_hat_k if figures else None), justify="right")
                    for k in ks
                ]
                cells += [
                    flake_text(figures.flake_class if figures else None),
                    _num(figures.invalid if figures else 0, "magenta"),
                    _num(figures.errors if figures else 0, "yellow"),
                ]
            else:
                cells.append(Text(f"{s.goal_reached}/{s.trials}" if s.trials else "…", justify="right"))
                ended = Text()
                for i, (reason, n) in enumerate(s.reasons.most_common()):
                    ended.append(", " if i else "")
                    ended.append_text(reason_text(reason))
                    ended.append(f" {n}")
                cells.append(ended)
            self.add_row(*cells, key=s.scenario_id)
        self.restore(current)
