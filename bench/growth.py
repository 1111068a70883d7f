"""How cost grows: memory and first paint of the real app over store sizes, drawn as a plot.

`python -m desktop` on data dirs seeded by bench/bigseed.py, the last open chat reopened (the
cold-start driver, bench/cold_start.py): for messages (1k, 10k, 100k, 1M in 100 chats) and for
chats (100, 1k, 10k with 10 messages each), the time from spawning the process to the last
open chat painted (best of 2) and the tree's RSS once the gateway's list is merged. The
same-run baseline is a bare QApplication with the same gateway child (bench/baseline.py).
The curves go to docs/bench-growth.png (drawn with Qt's own painter: no plotting library).
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path

BENCH = "growth"
MESSAGES = (1_000, 10_000, 100_000, 1_000_000)
MESSAGE_CHATS = 100
CHATS = (100, 1_000, 10_000)
PER_CHAT = 10
RUNS = 2
FLAT_MB = 20.0
TIME_S = 0.5
PLOT = Path(__file__).resolve().parent.parent / "docs" / "bench-growth.png"
SMALL_ENV = "HERMES_QT_BENCH_GROWTH_SMALL"  # development: the two smallest sizes only


def point(chats: int, messages: int) -> dict[str, float]:
    from bench.bigseed import seeded
    from bench.cold_start import RSS_ENV, once

    source = seeded(chats, messages)
    runs = [once(source, **{RSS_ENV: "1"}) for _ in range(RUNS)]
    return {
        "paint": min(r["shown"] for r in runs),
        "rss": min(r["rss"] for r in runs),
        "app_rss": min(r["app_rss"] for r in runs),
        "cached": float(all(r["cached"] for r in runs)),
    }


def plot(
    series: dict[str, list[tuple[int, dict[str, float]]]], base_rss: float, path: Path
) -> None:
    """Two panels (memory, first paint) over a log axis of sizes, one line per series."""
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen

    from bench.qtsupport import application

    application()
    width, height = 1200, 480
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    font = QFont()
    font.setPixelSize(13)
    p.setFont(font)
    colors = {"messages": QColor("#1f77b4"), "chats": QColor("#d62728")}
    sizes = [n for points in series.values() for n, _ in points]
    lo, hi = math.log10(min(sizes)), math.log10(max(sizes))
    panels = [
        ("app + gateway RSS (MB)", "rss", base_rss, "bare Qt + gateway"),
        ("process start -> last open chat painted (s)", "paint", TIME_S, "target"),
    ]
    for i, (title, field, line, line_label) in enumerate(panels):
        frame = QRectF(70 + i * 600, 50, 500, 360)
        values = [v[field] for points in series.values() for _, v in points] + [line]
        top = max(values) * 1.15
        p.setPen(QPen(QColor("#333333"), 1))
        p.drawRect(frame)
        p.drawText(QRectF(frame.left(), 12, frame.width(), 30), Qt.AlignmentFlag.AlignCenter, title)

        def at(n: float, v: float, frame: QRectF = frame, top: float = top) -> QPointF:
            x = frame.left() + (math.log10(n) - lo) / max(hi - lo, 1e-9) * frame.width()
            return QPointF(x, frame.bottom() - v / top * frame.height())

        for k in range(5):  # value grid and labels
            v = top * k / 4
            y = frame.bottom() - v / top * frame.height()
            p.setPen(QPen(QColor("#dddddd"), 1))
            p.drawLine(QPointF(frame.left(), y), QPointF(frame.right(), y))
            p.setPen(QColor("#333333"))
            label = f"{v:.0f}" if top > 10 else f"{v:.2f}"
            p.drawText(QRectF(frame.left() - 62, y - 9, 56, 18), Qt.AlignmentFlag.AlignRight, label)
        for e in range(math.floor(lo), math.ceil(hi) + 1):  # sizes, log scale
            x = at(10**e, 0).x()
            label = f"{10**e:,}"
            p.drawText(
                QRectF(x - 50, frame.bottom() + 4, 100, 18), Qt.AlignmentFlag.AlignCenter, label
            )
        dashed = QPen(QColor("#555555"), 1.5, Qt.PenStyle.DashLine)
        p.setPen(dashed)
        y = at(10**lo, line).y()
        p.drawLine(QPointF(frame.left(), y), QPointF(frame.right(), y))
        p.drawText(QRectF(frame.left() + 6, y - 18, 300, 16), line_label)
        for name, points in series.items():
            p.setPen(QPen(colors[name], 2.5))
            shown = [at(n, v[field]) for n, v in points]
            for a, b in itertools.pairwise(shown):
                p.drawLine(a, b)
            for dot in shown:
                p.drawEllipse(dot, 4, 4)
    legend = [
        ("messages (in 100 chats)", colors["messages"]),
        (f"chats ({PER_CHAT} messages each)", colors["chats"]),
    ]
    for j, (label, color) in enumerate(legend):
        x = 70 + j * 300
        p.setPen(QPen(color, 3))
        p.drawLine(QPointF(x, 450), QPointF(x + 30, 450))
        p.setPen(QColor("#333333"))
        p.drawText(QRectF(x + 38, 441, 250, 18), label)
    p.drawText(QRectF(700, 441, 480, 18), "store size (log scale)")
    p.end()
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(str(path))


def main() -> int:
    from bench.cold_start import profile
    from bench.common import Result, emit, run_child

    small = bool(os.environ.get(SMALL_ENV))
    base_rss = run_child(["-m", "bench.baseline"], 90)["rss"]
    point(MESSAGE_CHATS, MESSAGES[0])  # warm-up (bytecode, page cache): not a point
    series: dict[str, list[tuple[int, dict[str, float]]]] = {
        "messages": [(n, point(MESSAGE_CHATS, n)) for n in MESSAGES[: 2 if small else None]],
        "chats": [(n, point(n, n * PER_CHAT)) for n in CHATS[: 2 if small else None]],
    }
    plot(series, base_rss, PLOT)
    rows = []
    for name, points in series.items():
        (n0, first), (n1, last) = points[0], points[-1]
        curve = ", ".join(f"{n:,}: {v['rss']:.0f} MB / {v['paint']:.2f} s" for n, v in points)
        grew = last["rss"] - first["rss"]
        grew_app = last["app_rss"] - first["app_rss"]
        slow = [(v["paint"], n) for n, v in points if v["paint"] > TIME_S]
        note = ""
        if slow:  # a missed size keeps its profile: the slowest one's start under cProfile
            n = max(slow)[1]
            chats, messages = (MESSAGE_CHATS, n) if name == "messages" else (n, n * PER_CHAT)
            note = profile(chats, messages, f"growth-{name}")
        rows += [
            Result(
                BENCH,
                f"{name}: RSS at {n1:,} over {n0:,}",
                f"flat: <= +{FLAT_MB:g} MB",
                last["rss"],
                "MB",
                first["rss"],
                f"{n0:,} {name}, same app",
                grew <= FLAT_MB,
                f"+{grew:.1f} MB (app +{grew_app:.1f} MB, gateway child "
                f"+{grew - grew_app:.1f} MB), 5 s after online; bare Qt + gateway "
                f"{base_rss:.0f} MB; curve {curve}; "
                f"plot bench-growth.png",
            ),
            Result(
                BENCH,
                f"{name}: start -> last open chat painted at {n1:,}",
                f"bounded: <= {TIME_S:g} s at every size",
                last["paint"],
                "s",
                first["paint"],
                f"{n0:,} {name}, same app",
                all(v["paint"] <= TIME_S for _, v in points),
                f"best of {RUNS} per size; the chat from the local cache before online: "
                f"{'yes' if all(v['cached'] for _, v in points) else 'NOT always'}" + note,
            ),
        ]
    emit(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
