"""Connecting to a Dask scheduler by address, bounded in time, with one-line errors (used by
:func:`robodyn.campaign.get_client` for campaigns and datasets)."""

from __future__ import annotations

import threading


def connect(Client, address):
    """A ``Client`` of the scheduler at ``address``, within Dask's connect timeout
    (``distributed.comm.timeouts.connect``, 30 s by default): a peer that does not answer is a
    ``TimeoutError``, one that answers something other than Dask's protocol (an HTTP server)
    or refuses is a ``ConnectionError``; one line naming the address and the reason."""
    import dask
    from dask.utils import parse_timedelta

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    done = {}

    def attempt():
        try:
            done["client"] = Client(address, timeout=timeout)
        except BaseException as e:  # noqa: BLE001  (reported by the caller's thread)
            done["error"] = e

    # (in a thread: the handshake with a peer that accepts and never answers has no timeout)
    thread = threading.Thread(target=attempt, name="robodyn-connect", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"scheduler {address}: no Dask scheduler answered within "
                           f"{timeout:g} s (the peer accepted the connection but did not "
                           "answer in Dask's protocol)")
    e = done.get("error")
    if e is None:
        return done["client"]
    reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
    if isinstance(e, (OSError, TimeoutError)) and not isinstance(e, MemoryError):
        raise ConnectionError(f"scheduler {address}: cannot connect ({reason})") from None
    if isinstance(e, (KeyboardInterrupt, SystemExit)):
        raise e
    raise ConnectionError(f"scheduler {address}: not a Dask scheduler (its answer is not "
                          f"Dask's protocol: {type(e).__name__}: {reason})") from None
