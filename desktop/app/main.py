"""Composition root: builds the concrete core objects and the Qt application, and wires them."""

# ruff: noqa: E402  (the stand-ins below go in before anything imports asyncio or websockets)

from __future__ import annotations

from desktop.common.deferred import defer_unused_modules

# The standard modules asyncio and websockets import but the app seldom uses (ssl among them)
# are loaded on first use: this runs before this module's imports and main()'s.
defer_unused_modules()

import argparse
import asyncio
import gc
import logging
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from desktop import __version__
from desktop.app.assembly import AppPaths, Core
from desktop.app.bench_probe import BENCH_DRIVER_ENV, BENCH_STARTUP_ENV
from desktop.app.display import display_problem
from desktop.common.dirs import APP_NAME

if TYPE_CHECKING:
    # Types only: the modules themselves are imported where they are first needed, to keep
    # the first paint fast.

    from PySide6.QtWidgets import QApplication

    from desktop.app.single_instance import SingleInstance
    from desktop.core.link.profiles import Profile
    from desktop.ui.theme import ThemeMode

GATEWAY_SUBCOMMAND = "gateway"

log = logging.getLogger("desktop.app.main")


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=APP_NAME, description="A native desktop client for Hermes agent gateways."
    )
    parser.add_argument("--version", action="version", version=f"{APP_NAME} {__version__}")
    parser.add_argument("--data-dir", help="keep all app data here instead of the user dirs")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="start the embedded gateway, chat once offscreen, exit 0 on success",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [GATEWAY_SUBCOMMAND]:
        # A frozen build has no `python -m`: the app runs its embedded gateway as a subcommand.
        from desktop.gateway.cli import main as gateway_main

        return gateway_main(argv[1:])
    args = _parse_args(argv)
    if args.self_test:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    problem = display_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    try:
        return run(AppPaths.create(args.data_dir), self_test=args.self_test)
    except Exception as exc:
        # Anything unhandled before or during start-up (or that ends the loop later) is said
        # on stderr with the log's path, and in a dialog when there is a display to show it.
        from desktop.app.fatal import report_fatal

        return report_fatal(exc, _log_dirs(args.data_dir), started=_started)


# Set once the window is up: a later fatal error "stopped" the app, it did not fail to start.
_started = False


def _log_dirs(data_dir: str | None) -> list[Path]:
    """Where run() keeps its log (state/logs), for errors raised before it opened it."""
    if data_dir:
        return [Path(data_dir).expanduser().resolve() / "state" / "logs"]
    from desktop.common import dirs

    return [dirs.user_state_dir() / "logs"]


# -- the Qt application ---------------------------------------------------------------------


def _quit_on_signals(app: QApplication, quit_app: Callable[[], None]) -> Callable[[], None]:
    """SIGTERM/SIGINT quit like the Quit action: drafts flushed, the gateway child stopped.

    Qt's loop sleeps in C, so a signal wakes it through a socket the loop watches. Returns
    what undoes it.
    """
    import signal
    import socket

    from PySide6.QtCore import QSocketNotifier

    rsock, wsock = socket.socketpair()
    for sock in (rsock, wsock):
        sock.setblocking(False)
    signal.set_wakeup_fd(wsock.fileno())
    notifier = QSocketNotifier(rsock.fileno(), QSocketNotifier.Type.Read, app)
    notifier.activated.connect(lambda *_: rsock.recv(64))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: quit_app())

    def stop() -> None:
        signal.set_wakeup_fd(-1)
        notifier.setEnabled(False)
        rsock.close()
        wsock.close()

    return stop


def _int(value: object) -> int:
    """A whole number from the preferences file (0 for anything else)."""
    try:
        return int(str(value))
    except ValueError:
        return 0


def _theme_mode(value: object) -> ThemeMode:
    from desktop.ui.theme import ThemeMode

    try:
        return ThemeMode(str(value))
    except ValueError:
        return ThemeMode.SYSTEM


def follows_network(profiles: Iterable[Profile]) -> bool:
    """Whether network changes must reconnect a link: only a remote gateway's route can change
    (the embedded gateway and local Hermes are on loopback), and following them costs ~4 MB."""
    from desktop.core.link.profiles import ProfileKind

    return any(p.kind is ProfileKind.REMOTE for p in profiles)


def run(paths: AppPaths, *, self_test: bool = False) -> int:
    """Build the core and the window, run the qasync loop until the user quits."""
    # Start-up allocates a great deal and frees little: the collector's passes over the older
    # generations (~10 of the middle one and a full one, each walking everything kept so far)
    # cost ~40 ms before the window showed. Only the young generation is collected until the
    # window is painted (`_settle`).
    gc.set_threshold(_THRESHOLDS[0], _NEVER, _NEVER)
    try:
        return _run(paths, self_test=self_test)
    finally:
        gc.set_threshold(*_THRESHOLDS)


_THRESHOLDS = gc.get_threshold()  # the collector's own, restored once the window is painted
_NEVER = 1 << 30  # a collection threshold never reached


def _run(paths: AppPaths, *, self_test: bool) -> int:
    from desktop.ui.platform.sources import skip_feature_scan

    skip_feature_scan()  # before PySide6 (imported with qasync) reads every module's source
    import qasync
    from PySide6.QtWidgets import QApplication

    from desktop.app.single_instance import SingleInstance, ask_running_instance
    from desktop.ui.platform.errors import install_log_file

    install_log_file(paths.state / "logs")
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    app.setApplicationVersion(__version__)
    app.setDesktopFileName(APP_NAME)
    # One app (and so one embedded gateway) per data dir: a second launch raises the first.
    instance = SingleInstance(paths.data)
    if not instance.claim():
        told = ask_running_instance(paths.data)
        where = f"on {paths.data}"
        if told:
            message = f"{APP_NAME} is already running {where}: raised its window."
        else:
            message = (
                f"{APP_NAME} is already running {where} (pid {instance.owner_pid()}) "
                "but did not answer; close it or pass a different --data-dir."
            )
        log.info("%s", message)
        print(message, flush=True)
        # A self-test that did not run must not pass.
        return 0 if told and not self_test else 1
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    running = _Running()
    # Everything from here runs inside the loop: core objects may schedule work at once.
    try:
        with loop:
            code: int = loop.run_until_complete(
                _run_window(app, loop, paths, instance, running, self_test=self_test)
            )
    except RuntimeError:
        if running.core is None or running.finishing:
            raise
        # Qt ended its event loop by itself: it does so when the display goes away ("The X11
        # connection broke"). Nothing can be shown any more; keep what the user typed.
        code = _display_lost(running.core)
    finally:
        instance.release()
    QApplication.sendPostedEvents(None, 0)
    return code


def _settle() -> None:
    """Once the window is painted: the collector as it was, start-up objects out of its way."""
    # Start-up objects live as long as the app: keep the collector from re-walking them on
    # every full pass (those passes showed up as 25-60 ms scroll stalls).
    gc.freeze()
    gc.set_threshold(*_THRESHOLDS)
    from desktop.ui.platform.sources import forget_import_sources

    forget_import_sources()


@dataclass
class _Running:
    """What the loop's coroutine built, for the way out when Qt stops the loop under it."""

    core: Core | None = None
    finishing: bool = False  # our own quit path (window, signal, self-test) ran


def _display_lost(core: Core) -> int:
    """Save drafts and the store without the loop; one line on stderr and in the log; exit 1."""
    saved = core.drafts.flush()
    core.store.close()
    what = "drafts saved" if saved else "some drafts could not be saved"
    log.error("the connection to the display was lost: hermes-qt stopped (%s)", what)
    if sys.stderr is not None:
        print(
            f"hermes-qt: the connection to the display was lost; stopped ({what})",
            file=sys.stderr,
            flush=True,
        )
    return 1


async def _run_window(
    app: QApplication,
    loop: asyncio.AbstractEventLoop,
    paths: AppPaths,
    instance: SingleInstance,
    running: _Running,
    *,
    self_test: bool,
) -> int:
    from PySide6.QtCore import QSettings

    from desktop.app.live_profiles import LiveProfiles
    from desktop.ui.platform.errors import (
        ErrorReporter,
        install_exception_hooks,
        install_loop_handler,
    )
    from desktop.ui.platform.system_events import SystemEvents
    from desktop.ui.platform.tray import Tray
    from desktop.ui.settings.values import AppSettings
    from desktop.ui.theme import ThemeManager
    from desktop.ui.window.bridge import ProfileBridge, ProfileEntry
    from desktop.ui.window.main_window import MainWindow

    reporter = ErrorReporter()
    restore_hooks = install_exception_hooks(reporter)
    install_loop_handler(loop, reporter)
    core = Core(paths)
    running.core = core
    prefs = core.preferences
    profiles = prefs.profiles()
    controllers = [core.controller_for(p) for p in profiles]
    # Connect (and spawn the embedded gateway) first, so its start-up overlaps the window's.
    for controller in controllers:
        controller.start()
    entries = [
        ProfileEntry(p.name, ProfileBridge(c)) for p, c in zip(profiles, controllers, strict=True)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    settings = QSettings(str(paths.config / "window.ini"), QSettings.Format.IniFormat)
    theme = ThemeManager(app, _theme_mode(prefs.preference("theme", "system")))
    from desktop.app.settings_checks import SettingsChecks

    tray = Tray()
    window = MainWindow(
        entries,
        settings,
        tray=tray,
        app_settings=prefs.load,
        checks=SettingsChecks(prefs, paths.config, paths.state / "logs"),
        at_start=True,  # its first paint does not wait for code colours or links
    )
    theme.theme_changed.connect(window.set_colors)  # apply_preferences() below applies it

    # Network changes matter to remote links only (a loopback socket has no route to lose).
    system = SystemEvents(app, watch_network=False)
    from desktop.app.keep_awake import KeepAwake, LogindInhibitor
    from desktop.common.clock import AsyncioClock

    # While a reply runs the computer does not fall asleep (a logind inhibitor, capped).
    keep_awake = KeepAwake(LogindInhibitor(), AsyncioClock())
    watching: dict[str, tuple[object, Callable[[], None]]] = {}  # pid -> controller, unsubscribe

    def watch_profiles() -> None:
        """Follow each live controller once; a removed or rebuilt profile's old one is let go."""
        for pid in list(watching):
            if core.controllers.get(pid) is not watching[pid][0]:
                watching.pop(pid)[1]()
                keep_awake.forget(pid)
        for pid, controller in core.controllers.items():
            if pid not in watching:
                listener = keep_awake.listener(pid)
                watching[pid] = (controller, controller.subscribe(listener))
                listener.on_status(controller.status())  # it may be online already

    def add_entry(entry: ProfileEntry) -> None:
        if follows_network(prefs.profiles()):
            system.watch_network()
        system.network_changed.connect(entry.backend.network_changed)
        system.woke_up.connect(entry.backend.woke_up)
        watch_profiles()

    live = LiveProfiles(core, window, add_entry, lambda pid: watch_profiles())

    def apply_preferences(saved: AppSettings | None = None) -> None:
        if saved is not None:
            before = {p.id: p for p in prefs.profiles()}
            typed_tokens = {p.id for p in saved.profiles if p.token}
            try:
                prefs.save(saved)
            except (ValueError, OSError) as exc:
                reporter.present(window, "Settings not saved", str(exc))
                return
            live.apply_soon(before, typed_tokens)
            for controller in core.controllers.values():
                controller.reload_models()  # a provider added or changed: the header follows
        theme.set_mode(_theme_mode(prefs.preference("theme", "system")))
        window.set_send_key(str(prefs.preference("send_key", "enter")))
        window.chat_view.set_reading_width(_int(prefs.preference("reading_width", 0)))
        window.set_close_to_tray(bool(prefs.preference("close_to_tray", False)))
        tray.set_notifications(bool(prefs.preference("notifications", True)))
        keep_awake.set_enabled(bool(prefs.preference("keep_awake", True)))

    apply_preferences()
    window.settings_saved.connect(apply_preferences)
    for entry in entries:
        add_entry(entry)
    done: asyncio.Future[int] = loop.create_future()

    def finish(code: int) -> None:
        running.finishing = True
        if not done.done():
            done.set_result(code)

    window.quit_requested.connect(lambda: finish(0))
    instance.activation_requested.connect(window.bring_forward)
    stop_signals = _quit_on_signals(app, lambda: finish(0))
    app.lastWindowClosed.connect(lambda: None if window.close_to_tray else finish(0))
    if os.environ.get(BENCH_STARTUP_ENV):
        from desktop.app.bench_probe import report_startup

        report_startup(window, entries[0].backend)
    bench_driver = os.environ.get(BENCH_DRIVER_ENV)
    if bench_driver:
        from desktop.app.bench_probe import watch_first_paints

        watch_first_paints(window, entries[0].backend)
    window.show()
    window.focus_composer()
    from desktop.app.notifications import FreedesktopNotifier

    # Desktops without a tray (stock GNOME) still show notifications, through D-Bus.
    notifier = FreedesktopNotifier(APP_NAME, tray.open_chat)
    tray.set_desktop_notifier(notifier)
    # Connecting to the session bus (jeepney imported first) once the window is painted.
    bus_starts: list[asyncio.Task[bool]] = []  # the notifier's and the sleep watch's
    window.after_paint.call(lambda: bus_starts.append(loop.create_task(notifier.start())))
    from desktop.app.sleep_watch import SleepWatch

    def woke() -> None:
        log.info("the computer woke up: reconnecting")
        system.on_prepare_for_sleep(False)

    # A wake from sleep reconnects every link at once (logind says so on the system bus),
    # followed once the window is painted (connecting to the bus is not worth a later window).
    sleep_watch = SleepWatch(woke)
    if sys.platform.startswith("linux"):
        window.after_paint.call(lambda: bus_starts.append(loop.create_task(sleep_watch.start())))
    global _started
    _started = True
    window.after_paint.call(_settle)
    if bench_driver:
        from desktop.app.bench_probe import BenchApp, start_bench_driver

        start_bench_driver(bench_driver, loop, BenchApp(window, core, entries, finish))
    if self_test:
        from desktop.app.selftest import run_self_test

        loop.create_task(run_self_test(window, entries[0].backend, finish))
    try:
        return await done
    finally:
        window.save_state()
        await live.aclose()
        await keep_awake.aclose()
        for task in bus_starts:
            task.cancel()
        await asyncio.gather(*bus_starts, return_exceptions=True)
        await notifier.aclose()
        await sleep_watch.aclose()
        await core.aclose()
        restore_hooks()
        stop_signals()
        window.deleteLater()
        system.deleteLater()


if __name__ == "__main__":
    sys.exit(main())
