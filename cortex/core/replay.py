"""Replaying a store's journal into the state it describes, to check it against the store. Pure.

Every mutation of memories and edges appends a journal record in the transaction that makes
it, and a restore appends compensating records (`restore_memory`, `restore_forget`,
`restore_edge`, `restore_edge_delete`) instead of deleting history, so folding the whole
journal, oldest first, gives the live logical state: `digest_state` of the replay equals the
store's own digest. Records about no memory (merge and import summaries, checkpoint marks)
change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cortex.core.digest import StateDigest, digest_state
from cortex.core.serial import edge_from_dict, memory_from_dict

EdgeKey = tuple[str, str, str]
RESTORE_MEMORY = "restore_memory"  # payload: the memory as it is after a restore
RESTORE_FORGET = "restore_forget"  # memory_id: a memory the restored state does not have
RESTORE_EDGE = "restore_edge"  # payload: the edge as it is after a restore
RESTORE_EDGE_DELETE = "restore_edge_delete"  # payload: the key of an edge the restore removed


class Replay:
    """The memories and edges a journal describes, folded one record at a time."""

    def __init__(self) -> None:
        self.memories: dict[str, dict[str, Any]] = {}
        self.edges: dict[EdgeKey, dict[str, Any]] = {}
        self.unknown: list[int] = []  # seqs of records about a memory the replay never saw

    def apply(self, row: Mapping[str, Any]) -> None:
        """Fold one journal record (`op`, `memory_id`, `payload`, `at`) into the state."""
        op, payload, mid = row["op"], row.get("payload"), row.get("memory_id")
        if not isinstance(payload, dict):
            payload = {}
        if op == "access":
            for i in payload.get("ids", []):
                m = self.memories.get(str(i))
                if m is not None:
                    m["access_count"] = int(m.get("access_count") or 0) + 1
                    m["last_accessed"] = row["at"]
        elif op in ("edge", RESTORE_EDGE):
            self._edge(payload, row["at"], replace_all=op == RESTORE_EDGE)
        elif op in ("edge_delete", RESTORE_EDGE_DELETE):
            self.edges.pop(_key(payload), None)
        elif op == RESTORE_FORGET and mid:
            self.memories.pop(str(mid), None)
        elif mid and "id" in payload and "content" in payload:  # an insert or a restore: whole
            self.memories[str(mid)] = dict(payload)
        elif mid and payload:  # an update: the changed fields
            current = self.memories.get(str(mid))
            if current is None:
                self.unknown.append(int(row.get("seq") or 0))
            else:
                current.update(payload)

    def _edge(self, payload: Mapping[str, Any], at: str, *, replace_all: bool) -> None:
        key = _key(payload)
        seen = self.edges.get(key)
        if seen is None or replace_all:
            self.edges[key] = {**payload, "created": payload.get("created") or at}
        else:
            seen.update(strength=payload.get("strength"), status=payload.get("status"))

    def digest(self) -> StateDigest:
        """The digest of the replayed state (comparable with the store's `state_digest`)."""
        return digest_state(
            (memory_from_dict(m) for m in self.memories.values()),
            (edge_from_dict(e) for e in self.edges.values()),
        )


def _key(payload: Mapping[str, Any]) -> EdgeKey:
    return (str(payload.get("source")), str(payload.get("target")), str(payload.get("type")))


def replay(rows: Iterable[Mapping[str, Any]]) -> Replay:
    """The state a journal describes, records applied oldest first."""
    state = Replay()
    for row in rows:
        state.apply(row)
    return state
