"""The agent's work beside its reply, as a fold above the composer: the subagents its turns
delegated to (goal, status, live line or answer, the tools they called; Stop while one runs) and
the processes it left running in the background (command, uptime, output tail; Stop).

Hidden while there is neither. The heading summarises ("2 subagents, 1 running · 1 background
process") and folds the rows away; the fold is remembered per chat by the window.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QToolButton, QVBoxLayout, QWidget

from desktop.core.models import BackgroundProcess, Subagent
from desktop.ui.render.usage import took_text
from desktop.ui.render.wrap import ElidingLabel

_STATUS = {
    "running": "running",
    "completed": "done",
    "failed": "failed",
    "error": "failed",
    "interrupted": "stopped",
    "ended": "ended while disconnected",
}
_MARK = {"running": "◐", "completed": "✓", "interrupted": "■", "failed": "✗", "error": "✗"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def heading_text(agents: tuple[Subagent, ...], procs: tuple[BackgroundProcess, ...]) -> str:
    parts: list[str] = []
    if agents:
        running = sum(1 for a in agents if a.running)
        parts.append(_plural(len(agents), "subagent") + (f", {running} running" if running else ""))
    if procs:
        live = sum(1 for p in procs if p.running)
        part = _plural(len(procs), "background process")
        parts.append(part + (f", {live} running" if live != len(procs) else ""))
    return " · ".join(parts)


def subagent_line(agent: Subagent) -> tuple[str, str]:
    """The row's text and tooltip for one subagent."""
    status = _STATUS.get(agent.status, agent.status)
    if agent.stopping:
        status = "stopping…"
    detail = agent.text if agent.running else agent.summary
    took = f", {took_text(agent.duration)}" if agent.duration is not None else ""
    text = f"{_MARK.get(agent.status, '•')}  {agent.goal or 'Subagent'} — {status}{took}"
    if detail:
        text += f": {' '.join(detail.split())}"
    tip_lines = [agent.goal or "Subagent", f"Status: {status}{took}"]
    if agent.model:
        tip_lines.append(f"Model: {agent.model}")
    if agent.summary and not agent.running:
        tip_lines += ["", agent.summary]
    if agent.tools:
        tip_lines += ["", f"Tools ({len(agent.tools)}):", *agent.tools[-12:]]
    return text, "\n".join(tip_lines)


def process_line(proc: BackgroundProcess) -> tuple[str, str]:
    up = f", up {took_text(float(proc.uptime))}" if proc.uptime is not None and proc.running else ""
    status = "running" if proc.running else proc.status
    text = f"{'▶' if proc.running else '■'}  {proc.command} — {status}{up}"
    tip = f"{proc.command}\nStatus: {status}" + (f", pid {proc.pid}" if proc.pid else "")
    tail = proc.output.strip()
    if tail:
        tip += "\n\nOutput (last lines):\n" + "\n".join(tail.splitlines()[-10:])
    return text, tip


class _Row(QFrame):
    def __init__(self, text: str, tip: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("workRow")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 1, 4, 1)
        lay.setSpacing(4)
        self.label = ElidingLabel(text, self)
        self.label.setObjectName("workText")
        self.label.set_tip(tip)
        lay.addWidget(self.label, 1)
        self.stop = QToolButton(self)
        self.stop.setText("Stop")
        self.stop.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        policy = self.stop.sizePolicy()
        policy.setRetainSizeWhenHidden(True)  # every row the same height, Stop or not
        self.stop.setSizePolicy(policy)
        lay.addWidget(self.stop)


class WorkPanel(QWidget):
    """Subagents and background processes of the open chat.

    Signals:
        stop_subagent(str): the user asked to stop the subagent with this id.
        kill_process(str): the user asked to stop the background process with this id.
        folded(bool): the user folded (True) or unfolded the rows.
    """

    stop_subagent = Signal(str)
    kill_process = Signal(str)
    folded = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("workPanel")
        self.setAccessibleName("Subagents and background processes")
        self._state: tuple[object, ...] = ()
        self._support = ("", "")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 4, 12, 0)
        lay.setSpacing(1)
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("workToggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.toggle.clicked.connect(self._on_toggle_clicked)
        lay.addWidget(self.toggle)
        self.body = QWidget(self)
        self._rows = QVBoxLayout(self.body)
        self._rows.setContentsMargins(0, 0, 0, 0)
        self._rows.setSpacing(1)
        lay.addWidget(self.body)
        self.rows: dict[str, _Row] = {}
        self.hide()

    def set_support(self, subagent_reason: str, process_reason: str) -> None:
        """Why Stop is missing on this connection ("" where the gateway serves it)."""
        self._support = (subagent_reason, process_reason)
        self._state = ()  # rebuild: the Stop buttons change

    def set_folded(self, folded: bool) -> None:
        self.toggle.setChecked(not folded)
        self._show_fold()

    def show_work(self, agents: tuple[Subagent, ...], procs: tuple[BackgroundProcess, ...]) -> None:
        state = (agents, procs, self._support)
        if state == self._state:
            return
        self._state = state
        self.setVisible(bool(agents or procs))
        heading = heading_text(agents, procs)
        self.toggle.setText(heading)
        self.toggle.setAccessibleName(f"Agent work: {heading}")
        for row in self.rows.values():
            self._rows.removeWidget(row)
            row.deleteLater()
        self.rows = {}
        sub_reason, proc_reason = self._support
        for agent in agents:
            text, tip = subagent_line(agent)
            row = _Row(text, tip, self.body)
            row.setAccessibleName(f"Subagent: {text}")
            self._stop_button(row, agent.running, agent.stopping, sub_reason, agent.goal)
            row.stop.clicked.connect(lambda _=False, i=agent.id: self.stop_subagent.emit(i))
            self._add(f"subagent:{agent.id}", row)
        for proc in procs:
            text, tip = process_line(proc)
            row = _Row(text, tip, self.body)
            row.setAccessibleName(f"Background process: {text}")
            self._stop_button(row, proc.running, False, proc_reason, proc.command)
            row.stop.clicked.connect(lambda _=False, i=proc.id: self.kill_process.emit(i))
            self._add(f"process:{proc.id}", row)
        self._show_fold()

    def _stop_button(
        self, row: _Row, running: bool, stopping: bool, reason: str, what: str
    ) -> None:
        row.stop.setVisible(running)
        row.stop.setAccessibleName(f"Stop: {what}")
        if stopping:
            row.stop.setText("Stopping…")
            row.stop.setEnabled(False)
            row.stop.setToolTip("Asked to stop; it ends at its next step")
        elif reason:
            row.stop.setEnabled(False)
            row.stop.setToolTip(reason)
        else:
            row.stop.setToolTip(f"Stop {what}")
        row.stop.setAccessibleDescription(row.stop.toolTip())

    def _add(self, key: str, row: _Row) -> None:
        self._rows.addWidget(row)
        self.rows[key] = row

    def _show_fold(self) -> None:
        open_ = self.toggle.isChecked()
        self.body.setVisible(open_)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)

    def _on_toggle_clicked(self, checked: bool) -> None:
        self._show_fold()
        self.folded.emit(not checked)
