import asyncio
import gc
import time

from bench.inapp import PaintClock, finish, listed, online
from bench.long_session import LONG_KEY, SHORT_KEY
from bench.memory import open_session


async def drive(app):
    await online(app); await listed(app, [LONG_KEY, SHORT_KEY])
    clock = PaintClock(app.window)
    await open_session(app, clock, SHORT_KEY)
    await open_session(app, clock, LONG_KEY)
    gcs = []; t = [0.0]
    def cb(phase, info):
        if phase == "start": t[0] = time.perf_counter()
        else: gcs.append((info["generation"], time.perf_counter() - t[0]))
    gc.callbacks.append(cb)
    view = app.window.chat_view; bar = view.verticalScrollBar()
    steps = []; prepends = []
    orig = view.prepend_messages
    def pm(msgs):
        t0 = time.perf_counter(); orig(msgs); prepends.append(time.perf_counter() - t0)
    view.prepend_messages = pm
    for d in (-1, 1):
        for _ in range(1500):
            await asyncio.sleep(0)
            b = bar.value()
            if (d < 0 and b <= 0) or (d > 0 and b >= bar.maximum()):
                await asyncio.sleep(0.01)
                if bar.value() == b: break
                continue
            n = len(gcs)
            t0 = time.perf_counter(); bar.setValue(b + d * bar.pageStep()); view.viewport().repaint()
            steps.append((time.perf_counter() - t0, gcs[n:]))
    gc.callbacks.remove(cb)
    steps.sort(key=lambda s: -s[0])
    finish(app, {"worst": [(round(s*1000,1), [(g, round(x*1000,1)) for g, x in c]) for s, c in steps[:12]],
                 "gen2": [round(x*1000,1) for g, x in gcs if g == 2][:20], "ngc": len(gcs),
                 "prepends": [round(p*1000,1) for p in prepends][:30], "rows": view.chat_model.rowCount()})
