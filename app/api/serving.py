"""How `figsearch serve` runs uvicorn: a deadline for request headers and a connection cap.

uvicorn's keep-alive timeout only covers idle connections between requests, and any byte resets
it, so a client that opens connections and sends headers slowly holds them forever. The
protocol below closes a connection whose request headers are not complete `header_timeout_s`
after it opened (or after its previous response); `limit_concurrency` answers 503 past
`max_connections`.
"""
from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.settings import Settings


class HeaderTimeoutProtocol(H11Protocol):
    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # still inside (or before) a request's headers
            self._arm_header_timer()
        else:
            self._cancel_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._cancel_header_timer()  # idle keep-alive connections have uvicorn's own timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def uvicorn_options(settings: Settings) -> dict:
    """Keyword arguments for uvicorn.run (also used by the hardening probe)."""
    protocol = type("FigsearchH11Protocol", (HeaderTimeoutProtocol,),
                    {"header_timeout_s": settings.header_timeout_s})
    return {"http": protocol, "limit_concurrency": settings.max_connections, "timeout_keep_alive": 5,
            "h11_max_incomplete_event_size": 16 * 1024, "server_header": False}
