"""Forward may-analysis of pending generic-proxy shared-memory accesses.

Both front ends (PTX and TTGIR) lower a function to a control-flow graph of ``Block``s whose events are
shared-memory ``Access``es and proxy ``Fence``s. The analysis keeps, at each program point, the set of
generic accesses not yet ordered with the async proxy by a fence. It runs to a fixed point over loops and
branches (join = union): a generic access reaches an async access if it does so on *some* path.

Rules (PTX ISA 8.6 / 9.7.9.25.2; Triton's ProxyFenceInsertion):
- a generic write followed by an async read of the same bytes is a RAW hazard;
- a generic read or write followed by an async write is a WAR / WAW hazard;
- only a proxy fence clears pending accesses; barriers do not. A CTA-scope fence is enough for
  a CTA-scope async access; a cluster-scope access (multicast TMA, two-CTA MMA) needs a cluster fence;
- async -> async and async -> generic need no fence (completion carries an implicit proxy fence),
  so async accesses never become pending;
- a non-bulk ``cp.async`` write (generic proxy) is made when the copy completes, not when it is issued: a
  fence orders only what its thread has performed, so a copy still in flight at the fence needs another
  fence after it completes. Copies complete at ``cp.async.wait_group N`` (every committed group but the N
  most recent; ``wait_all`` is a commit and ``wait_group 0``) or, once ``cp.async.mbarrier.arrive`` made an
  mbarrier track them, at a wait on that mbarrier (on one whose address may be the same, where the
  addresses are not known). The front ends give only the completions that surely happen: a predicated
  commit, wait or arrive is taken not to run, and only a ``try_wait`` (which Triton retries until it
  succeeds) completes, not a ``test_wait`` whose answer may be no. A copy in flight that no fence has
  followed yet is checked as the write it will be (no fence at all between a copy and its reader is a
  hazard, whatever the waits); one that a fence followed is not checked until it completes: reading or
  overwriting bytes still being copied is a race that no fence repairs, and in a ring of stages the
  copies in flight are the other stages'.
After reporting a hazard the analysis continues as if the suggested fence were there, so one missing
fence gives one report per (writer, reader) pair and no cascade.
"""
from __future__ import annotations

import bisect
import enum
import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence, Union


class AccessKind(enum.Enum):
    GENERIC_WRITE = "generic write"
    GENERIC_READ = "generic read"
    ASYNC_READ = "async read"
    ASYNC_WRITE = "async write"

    @property
    def is_async(self) -> bool:
        return self in (AccessKind.ASYNC_READ, AccessKind.ASYNC_WRITE)


class Scope(enum.Enum):
    CTA = "cta"
    CLUSTER = "cluster"


class Overlap(enum.Enum):
    NO = 0
    UNKNOWN = 1  # the analysis cannot tell (an address or buffer it cannot resolve)
    YES = 2


class Region(Protocol):
    def overlap(self, other: "Region") -> Overlap:
        ...


@dataclass(frozen=True)
class Instruction:
    """An instruction (PTX) or operation (TTGIR) as the user sees it."""
    text: str
    line: int  # 1-based line in the analysed text
    source: str | None = None  # Python "file:line" when the IR records it


@dataclass(frozen=True, eq=False)  # identity: each access event is created once
class Access:
    kind: AccessKind
    region: Region
    instruction: Instruction
    scope: Scope = Scope.CTA  # for async accesses: the fence scope they need
    unresolved: str | None = None  # why the region is not precise, if it is not
    in_flight: bool = False  # a cp.async write: made when the copy completes (see the module's rules)


@dataclass(frozen=True)
class Fence:
    scope: Scope
    instruction: Instruction


@dataclass(frozen=True)
class CopyCommit:
    """``cp.async.commit_group``: the copies not yet in a group become the newest group."""
    instruction: Instruction


@dataclass(frozen=True)
class CopyWait:
    """``cp.async.wait_group N``: every group but the ``pending`` most recent is complete."""
    pending: int
    instruction: Instruction


@dataclass(frozen=True)
class CopyArrive:
    """``cp.async.mbarrier.arrive``: the mbarrier at ``barrier`` tracks every copy the thread issued before it."""
    barrier: Region
    instruction: Instruction


@dataclass(frozen=True)
class BarrierWait:
    """A wait on the mbarrier at ``barrier`` that surely completes: the copies it tracks are complete."""
    barrier: Region
    instruction: Instruction


Copy = Union[CopyCommit, CopyWait, CopyArrive, BarrierWait]
Event = Union[Access, Fence, Copy]


@dataclass
class Block:
    events: list[Event] = field(default_factory=list)
    successors: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Hazard:
    kind: str  # "RAW", "WAR" or "WAW"
    generic: Access
    async_access: Access
    certain: bool  # False when the overlap is only possible because something was not resolved
    cta_fence_seen: bool  # a CTA fence ordered the access but the async access needs a cluster fence


_OPEN = -1  # a copy in flight and in no group yet
_MAX_AGE = 16  # ages are counted exactly up to here (see _run)


# -- work budget ---------------------------------------------------------------------------------------

WORK_BUDGET = 5_000_000  # steps per check: the largest corpus kernel takes a tenth of it (docs/fence.md, Cost)


class WorkBudgetExceeded(Exception):
    """The check did more work than its budget allows: the kernel is not decided (``checker`` reports it as an
    ``unknown`` finding that names the budget, never as clean)."""

    def __init__(self, limit: int):
        super().__init__(f"the check stopped after its work budget of {limit:,} steps; the kernel is not decided")
        self.limit = limit


class WorkBudget:
    """A bound on the work of one check, so that no input (hostile or huge PTX) makes it run for long.

    A step is an event applied to a state, a pending access looked at, copied or joined, an overlap test, or a
    register value computed by the address analysis. ``spend`` raises ``WorkBudgetExceeded`` past ``limit``
    (default ``WORK_BUDGET``); ``spent`` says how many were taken."""
    __slots__ = ("limit", "spent")

    def __init__(self, limit: int | None = None):
        self.limit = WORK_BUDGET if limit is None else limit
        self.spent = 0

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.spent > self.limit:
            raise WorkBudgetExceeded(self.limit)


# -- states --------------------------------------------------------------------------------------------


class _Pending:
    """A generic access not yet ordered with the async proxy. Pending accesses of the same kind to the same
    region are one entry (the first one on the path is shown).

    A copy in flight (see the module's rules) has an ``age``: ``_OPEN`` until a commit puts it in a group,
    then the number of groups committed after its own, up to ``_run``'s cap; ``tracked``: the mbarriers
    whose waits complete it; ``followed``: a fence has followed it (it is checked again once it is made).
    An access that is made has age None. (Copies in flight are kept as ``_Issued`` entries while the paths
    that reach a point agree on what happened since they were issued; ``_explicit`` turns them into these.)"""
    __slots__ = ("kind", "region", "cta_fenced", "access", "age", "tracked", "followed", "_hash")

    def __init__(self, kind: AccessKind, region: Region, cta_fenced: bool, access: Access, age: int | None = None,
                 tracked: int = 0, followed: bool = False):
        self.kind, self.region, self.cta_fenced, self.access = kind, region, cta_fenced, access
        self.age, self.tracked, self.followed = age, tracked, followed  # tracked: a bit per mbarrier (_barrier_bits)
        self._hash = hash((kind, region, cta_fenced, age, tracked, followed))  # once: states are sets of these

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, _Pending) and self._hash == other._hash and
                                 self.kind is other.kind and self.region == other.region and
                                 self.cta_fenced == other.cta_fenced and self.age == other.age and
                                 self.tracked == other.tracked and self.followed == other.followed)

    def made(self) -> "_Pending":
        return _Pending(self.kind, self.region, False, self.access)

    def moved(self, age: int | None, tracked: int, followed: bool, cta_fenced: bool) -> "_Pending":
        return _Pending(self.kind, self.region, cta_fenced, self.access, age, tracked, followed)


class _Issued:
    """A copy in flight kept relative to its state's ``_Log``: ``pos`` is the log's clock when it was issued, and
    the log's commits, arrives and fences at ``pos`` or later are the ones that came after it. So a commit, an
    arrive or a fence is one entry in the log, not a change to every copy in flight, and the copies a wait
    completes are a prefix of the copies ordered by ``pos``."""
    __slots__ = ("kind", "region", "pos", "access", "_hash")

    def __init__(self, kind: AccessKind, region: Region, pos: int, access: Access):
        self.kind, self.region, self.pos, self.access = kind, region, pos, access
        self._hash = hash((kind, region, pos))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, _Issued) and self._hash == other._hash and self.pos == other.pos
                                 and self.kind is other.kind and self.region == other.region)


def _pos(issued: _Issued) -> int:
    return issued.pos


class _Log:
    """Positions (clock values) of the events since the ``_Issued`` copies of a state: the last fence that
    orders the whole state (``fence``), the last CTA fence where the kernel needs cluster fences (``cta``), the
    last ``cap + 1`` commits (``commits``, oldest first) and the last arrive on each tracking mbarrier
    (``arrives``: bit -> position). An event at position ``p`` comes after every copy with ``pos <= p``. -1: none."""
    __slots__ = ("fence", "cta", "commits", "arrives")

    def __init__(self, fence: int, cta: int, commits: tuple, arrives: dict):
        self.fence, self.cta, self.commits, self.arrives = fence, cta, commits, arrives

    def __eq__(self, other) -> bool:
        return self is other or (self.fence == other.fence and self.cta == other.cta and
                                 self.commits == other.commits and self.arrives == other.arrives)

    __hash__ = None


_NO_LOG = _Log(-1, -1, (), {})


class _State:
    """The pending accesses at a program point: ``made`` (made accesses: ``_Pending`` of age None), ``flight``
    (copies in flight as ``_Pending``) and ``issued`` (copies in flight as ``_Issued`` of ``log``, ordered by
    ``pos``; ``issued_set``: the same as a set). ``clock``: the position of the next logged event."""
    __slots__ = ("made", "flight", "issued", "issued_set", "log", "clock", "grown_from")

    def __init__(self, made: frozenset, flight: frozenset, issued: tuple = (), issued_set: frozenset = frozenset(),
                 log: _Log = _NO_LOG, clock: int = 0, grown_from: "_State | None" = None):
        self.made, self.flight, self.issued, self.issued_set, self.log, self.clock = \
            made, flight, issued, issued_set, log, clock
        self.grown_from = grown_from  # a state this one only adds entries to (the block's in-state; see _join)

    def __eq__(self, other) -> bool:
        return self is other or (self.made == other.made and self.flight == other.flight and
                                 self.issued_set == other.issued_set and self.log == other.log)

    __hash__ = None

    def size(self) -> int:
        return len(self.made) + len(self.flight) + len(self.issued)


_EMPTY = _State(frozenset(), frozenset())
_BULK = 16  # entries a set operation copies or compares in C per step (a step is about one entry looked at in Python)


def _explicit(state: _State, cap: int) -> list[_Pending]:
    """The ``_Issued`` copies of ``state`` as ``_Pending`` entries (their age, tracking mbarriers and fences)."""
    log = state.log
    arrives = sorted((pos, bit) for bit, pos in log.arrives.items())
    positions = [pos for pos, _ in arrives]
    later = [0] * (len(arrives) + 1)  # later[i]: the bits of the arrives from the i-th on
    for i in range(len(arrives) - 1, -1, -1):
        later[i] = later[i + 1] | arrives[i][1]
    commits = log.commits
    result = []
    for copy in state.issued:
        count = len(commits) - bisect.bisect_left(commits, copy.pos)  # commits after it (at most cap + 1)
        age = _OPEN if count == 0 else min(count - 1, cap)
        tracked = later[bisect.bisect_left(positions, copy.pos)]
        result.append(_Pending(copy.kind, copy.region, log.cta >= copy.pos, copy.access, age, tracked,
                               log.fence >= copy.pos))
    return result


def _join(states: list[_State], cap: int, budget: WorkBudget, explicit: bool = False) -> _State:
    """The union of ``states`` (the first one's entries are kept where entries are equal). Copies in flight stay
    relative where every state that has some has the same log (and not ``explicit``), and are made explicit
    otherwise."""
    states = list({id(state): state for state in states}.values())
    if len(states) == 1 and not (explicit and states[0].issued):
        return states[0]
    for state in states:  # one that only added to the others (a branch around a store): no set operation
        if all(other is state or other is state.grown_from for other in states):
            return state
    budget.spend(sum(s.size() for s in states) // _BULK)
    first, rest = states[0], states[1:]
    made = first.made.union(*[s.made for s in rest])
    flight = first.flight.union(*[s.flight for s in rest])
    issuing = [s for s in states if s.issued]
    if not issuing:
        return _State(made, flight)
    log = issuing[0].log
    if not explicit and all(s.log == log for s in issuing[1:]):
        if len(issuing) == 1:
            return _State(made, flight, issuing[0].issued, issuing[0].issued_set, log, issuing[0].clock)
        clock = max(s.clock for s in issuing)
        largest = max(issuing, key=lambda s: len(s.issued))
        if all(s.issued_set <= largest.issued_set for s in issuing):  # a loop's state and what a wait left of it
            return _State(made, flight, largest.issued, largest.issued_set, log, clock)
        issued_set = issuing[0].issued_set.union(*[s.issued_set for s in issuing[1:]])
        budget.spend(len(issued_set))
        return _State(made, flight, tuple(sorted(issued_set, key=_pos)), issued_set, log, clock)
    budget.spend(sum(len(s.issued) for s in issuing))
    return _State(made, flight.union(*[_explicit(s, cap) for s in issuing]))


def _covers(old: _State, new: _State, cap: int, budget: WorkBudget, explicit: bool) -> bool:
    """Whether joining ``new`` into ``old`` (``explicit``: as ``_join`` does for the block) leaves ``old`` as it is."""
    budget.spend(new.size() // _BULK + 1)
    if not (new.made <= old.made and new.flight <= old.flight):
        return False
    if not new.issued:
        return True
    if not explicit:
        return bool(old.issued) and new.log == old.log and new.issued_set <= old.issued_set
    budget.spend(len(new.issued))
    return all(p in old.flight for p in _explicit(new, cap))


def _fence(flight: frozenset, scope: Scope, cluster_async: bool) -> frozenset:
    """A fence marks each explicit copy in flight as followed by it (or by a CTA fence where the kernel has
    cluster-scope async accesses), to be ordered again once it is made. (What it does to made accesses and
    to ``_Issued`` copies is in ``_run``.)"""
    whole = scope is Scope.CLUSTER or not cluster_async  # no cluster-scope async access: a CTA fence is enough
    if whole:
        return frozenset(p if p.followed else p.moved(p.age, p.tracked, True, p.cta_fenced) for p in flight)
    return frozenset(p if p.cta_fenced else p.moved(p.age, p.tracked, p.followed, True) for p in flight)


def _copy(flight: frozenset, event: "Copy", cap: int) -> tuple[frozenset, list[_Pending]]:
    """The explicit copies in flight after a commit, a wait or an arrive, and those it completed (made). Ages stop
    at ``cap`` (one more than the largest ``N`` of the function's waits, at most ``_MAX_AGE + 1``), so the states
    stay few over loops; below the cap an age is exact, at the cap it says "at least": a wait of an ``N`` at the
    cap or above completes nothing it cannot be sure of (such copies complete at a later, smaller wait)."""
    changed = {}  # only the entries an event changes are rebuilt (and hashed again)
    done = []
    for p in flight:
        if isinstance(event, CopyCommit):
            age = min(p.age + 1, cap)
            if age != p.age:
                changed[p] = p.moved(age, p.tracked, p.followed, p.cta_fenced)
        elif isinstance(event, CopyWait):
            if event.pending < cap and p.age >= event.pending:
                changed[p] = None
        elif isinstance(event, _Arrive):
            if not p.tracked & event.bit:
                changed[p] = p.moved(p.age, p.tracked | event.bit, p.followed, p.cta_fenced)
        elif p.tracked & event.mask:  # _Wait: a wait on a barrier that may be one tracking the copy completes it
            changed[p] = None
    if not changed:
        return flight, done
    done = [p.made() for p, moved in changed.items() if moved is None]
    return (flight - frozenset(changed)) | frozenset(m for m in changed.values() if m is not None), done


def _last_arrive(arrives: dict, mask: int) -> tuple[int, int]:
    """The position of the last arrive on an mbarrier of ``mask`` (-1: none), and the steps it took."""
    if mask & (mask - 1) == 0:
        return arrives.get(mask, -1), 1
    if len(arrives) <= mask.bit_count():
        return max((pos for bit, pos in arrives.items() if bit & mask), default=-1), len(arrives) + 1
    last, steps = -1, 1
    while mask:
        bit = mask & -mask
        mask ^= bit
        steps += 1
        last = max(last, arrives.get(bit, -1))
    return last, steps


@dataclass(frozen=True)
class _Arrive:
    """A ``CopyArrive`` with its barrier as a bit (``_barrier_bits``)."""
    bit: int
    instruction: Instruction


@dataclass(frozen=True)
class _Wait:
    """A ``BarrierWait`` with the bits of every arrive barrier it may be (``_barrier_bits``)."""
    mask: int
    instruction: Instruction


def _span(region: Region):
    """(key, lo, hi) where the region has one (``PtxRegion.span``): two regions with spans may overlap exactly
    where their keys are equal and their ``[lo, hi)`` meet (``hi`` None: unbounded)."""
    span = getattr(region, "span", None)
    return span() if span is not None else None


class _SpanIndex:
    """Regions, each with a bit, to find those that may overlap a region without an overlap test per pair:
    regions with a span are sorted by ``lo`` per key; the others, and a region without a span, are tested one by
    one (``overlap`` is called as ``member.overlap(region)``)."""

    def __init__(self, members: list[tuple[Region, int]]):
        self.members = members
        self.loose = []  # members without a span
        groups: dict = {}
        for region, bit in members:
            span = _span(region)
            if span is None:
                self.loose.append((region, bit))
            else:
                groups.setdefault(span[0], []).append((span[1], math.inf if span[2] is None else span[2], bit))
        self.groups = {}
        for key, group in groups.items():
            group.sort()
            reach, top = [], -math.inf  # reach[i]: the highest end of the first i + 1
            for _, hi, _ in group:
                top = max(top, hi)
                reach.append(top)
            disjoint = all(group[i][1] <= group[i + 1][0] for i in range(len(group) - 1))
            sums = [0]  # disjoint: the bits of the members i..k-1 are sums[k] - sums[i] (each bit is one member's)
            if disjoint:
                for _, _, bit in group:
                    sums.append(sums[-1] + bit)
            self.groups[key] = ([lo for lo, _, _ in group], [hi for _, hi, _ in group], reach, group,
                                sums if disjoint else None)

    def _below(self, span) -> tuple | None:
        """The group of ``span``'s key and how many of its members begin below ``span``'s end."""
        group = self.groups.get(span[0])
        if group is None:
            return None
        return group, len(group[0]) if span[2] is None else bisect.bisect_left(group[0], span[2])

    def any(self, region: Region, budget: WorkBudget) -> bool:
        """Whether some member may overlap ``region``."""
        span = _span(region)
        pool = self.members if span is None else self.loose
        budget.spend(len(pool) + 1)
        if any(member.overlap(region) is not Overlap.NO for member, _ in pool):
            return True
        found = None if span is None else self._below(span)
        if not found:
            return False
        (_, _, reach, _, _), count = found
        return count > 0 and reach[count - 1] > span[1]

    def mask(self, region: Region, budget: WorkBudget) -> int:
        """The bits of the members that may overlap ``region``."""
        span = _span(region)
        pool = self.members if span is None else self.loose
        budget.spend(len(pool) + 1)
        result = sum(bit for member, bit in pool if member.overlap(region) is not Overlap.NO)
        found = None if span is None else self._below(span)
        if not found:
            return result
        (_, his, _, group, sums), count = found
        if sums is not None:  # disjoint members: those that end above span's start are a run up to count
            first = bisect.bisect_right(his, span[1])
            return result | (sums[count] - sums[first] if first < count else 0)
        budget.spend(count)
        return result | sum(bit for _, hi, bit in group[:count] if hi > span[1])


def _barrier_bits(events: list[list[Event]], budget: WorkBudget) -> list[list[Event]]:
    """Arrives and waits with their barriers as bit masks: one bit per distinct arrive barrier, and a wait's mask
    has the bit of every arrive barrier that may be its own, so completing a copy is one ``&``, not a scan of
    its barriers (many mbarriers made that cubic). The masks are found through a ``_SpanIndex``, not by testing
    every (arrive, wait) pair."""
    bits: dict = {}
    for block_events in events:
        for event in block_events:
            if isinstance(event, CopyArrive) and event.barrier not in bits:
                bits[event.barrier] = 1 << len(bits)
    index = _SpanIndex(list(bits.items()))
    masks: dict = {}

    def mask(barrier) -> int:
        if barrier not in masks:
            masks[barrier] = index.mask(barrier, budget)
        return masks[barrier]

    return [[_Arrive(bits[e.barrier], e.instruction) if isinstance(e, CopyArrive) else
             _Wait(mask(e.barrier), e.instruction) if isinstance(e, BarrierWait) else e for e in block_events]
            for block_events in events]


def _run(state: _State, events: Sequence[Event], hazards: "list[Hazard] | _Representatives | None",
         cluster_async: bool, cap: int, budget: WorkBudget | None = None) -> _State:
    """Apply a block's events. The fence a hazard calls for is applied after the whole instruction,
    so every operand of one instruction (wgmma A and B) is checked against the same state.

    Within the block the state is kept in mutable copies, made on the first change (an access added to a
    frozen set copied it whole at each access: quadratic in a long block)."""
    made, flight = state.made, state.flight
    issued, issued_set, log, clock = state.issued, state.issued_set, state.log, state.clock
    fence_at, cta_at, commits, arrives = log.fence, log.cta, log.commits, log.arrives
    own_made = own_issued = own_arrives = changed = logged = False
    grown = True  # only entries added so far
    steps, bulk = len(events), 0  # entries looked at in Python; entries copied by set operations (see _BULK)

    def own_made_set() -> None:
        """A mutable copy of the made accesses."""
        nonlocal made, own_made, bulk
        if not own_made:
            made, own_made, bulk = set(made), True, bulk + len(made)

    def own_issued_list() -> None:
        """Mutable copies of the ``_Issued`` copies in flight."""
        nonlocal issued, issued_set, own_issued, bulk
        if not own_issued:
            issued, issued_set, own_issued, bulk = list(issued), set(issued_set), True, bulk + 2 * len(issued)

    def complete(upto: int) -> None:
        """The ``_Issued`` copies at positions up to ``upto`` are made. (Where the block has not copied the sets
        yet, one set operation each: a wait is often a block of its own, in a loop that retries it.)"""
        nonlocal made, issued, issued_set, bulk, fence_at, cta_at, commits, arrives, clock, logged, steps, grown
        count = bisect.bisect_right(issued, upto, key=_pos)
        if not count:
            return
        grown = False
        steps += count
        done = issued[:count]
        entries = [_Pending(copy.kind, copy.region, False, copy.access) for copy in done]
        if own_made:
            made.update(entries)
        else:
            made, bulk = made.union(entries), bulk + len(made)
        if own_issued:
            issued_set.difference_update(done)
            del issued[:count]
        else:
            issued, issued_set, bulk = issued[count:], issued_set.difference(done), bulk + 2 * len(issued)
        if not issued:  # nothing refers to the log any more
            fence_at, cta_at, commits, arrives, clock, logged = -1, -1, (), {}, 0, True

    def fence(scope: Scope) -> None:
        nonlocal made, own_made, flight, fence_at, cta_at, clock, logged, steps, grown
        whole = scope is Scope.CLUSTER or not cluster_async
        grown = False
        if whole:
            made, own_made = frozenset(), False
        elif made:
            steps += len(made)
            made, own_made = {p if p.cta_fenced else p.moved(None, 0, False, True) for p in made}, True
        if flight:
            steps += len(flight)
            flight = _fence(flight, scope, cluster_async)
        if issued:
            if whole:
                fence_at = clock
            else:
                cta_at = clock
            clock, logged = clock + 1, True

    deferred: Scope | None = None
    for index, event in enumerate(events):
        if isinstance(event, Fence):
            changed = True
            fence(event.scope)
        elif isinstance(event, Access):
            if not event.kind.is_async:
                if event.in_flight:
                    entry = _Issued(event.kind, event.region, clock, event)
                    if entry not in issued_set:
                        own_issued_list()
                        issued.append(entry)
                        issued_set.add(entry)
                        changed = True
                else:
                    entry = _Pending(event.kind, event.region, False, event)
                    if entry not in made:
                        own_made_set()
                        made.add(entry)
                        changed = True
            else:
                found, looked = _check(event, hazards, made, flight, issued, fence_at, cta_at)
                steps += looked
                if found:
                    deferred = Scope.CLUSTER if Scope.CLUSTER in (deferred, event.scope) else Scope.CTA
        else:
            if flight:
                steps += len(flight)
                flight, done = _copy(flight, event, cap)
                if done:
                    own_made_set()
                    made.update(done)
                changed, grown = True, False
            if issued:
                changed, grown = True, False
                if isinstance(event, CopyCommit):
                    commits, clock, logged = (commits + (clock,))[-(cap + 1):], clock + 1, True
                elif isinstance(event, CopyWait):
                    if event.pending < cap and len(commits) > event.pending:
                        complete(commits[-(event.pending + 1)])
                elif isinstance(event, _Arrive):
                    if not own_arrives:
                        arrives, own_arrives, bulk = dict(arrives), True, bulk + len(arrives)
                    arrives[event.bit] = clock
                    clock, logged = clock + 1, True
                else:
                    last, looked = _last_arrive(arrives, event.mask)
                    steps += looked
                    if last >= 0:
                        complete(last)
        following = events[index + 1] if index + 1 < len(events) else None
        if deferred is not None and (following is None or following.instruction != event.instruction):
            changed = True
            fence(deferred)
            deferred = None
        if budget is not None and steps + bulk // _BULK > 4096:
            budget.spend(steps + bulk // _BULK)
            steps = bulk = 0
    if changed and own_made:
        made, bulk = frozenset(made), bulk + len(made)
    if changed and own_issued and issued:
        issued, issued_set, bulk = tuple(issued), frozenset(issued_set), bulk + 2 * len(issued)
    if budget is not None:
        budget.spend(steps + bulk // _BULK)
    if not changed:
        return state
    if not issued:
        return _State(made, flight, grown_from=state if grown else None)
    if logged or own_arrives:
        log = _Log(fence_at, cta_at, commits, arrives)
    return _State(made, flight, issued, issued_set, log, clock, state if grown else None)


def _check(event: Access, hazards: "list[Hazard] | _Representatives | None", made, flight, issued=(),
           fence_at: int = -1, cta_at: int = -1) -> tuple[bool, int]:
    """Whether an async access meets a pending access (each one recorded in ``hazards`` unless it is None: then
    the first one is enough), and how many entries were looked at."""
    found = False
    cta = event.scope is Scope.CTA
    start = bisect.bisect_right(issued, max(fence_at, cta_at) if cta else fence_at, key=_pos)
    looked = len(made) + len(flight) + len(issued) - start
    region, reads = event.region, event.kind is AccessKind.ASYNC_READ  # an async read meets generic writes only
    # with _Representatives: a pending access after the line of a certain hazard already held changes nothing
    bounds = hazards.bounds(event) if isinstance(hazards, _Representatives) else None
    for group in (made, flight, itertools.islice(issued, start, None)):
        explicit = group is made or group is flight
        for pending in group:
            if group is flight and pending.followed:
                continue
            fenced = pending.cta_fenced if explicit else cta_at >= pending.pos
            if fenced and cta:
                continue
            writes = pending.kind is AccessKind.GENERIC_WRITE
            if reads and not writes:
                continue
            if bounds is not None and pending.access.instruction.line >= bounds[writes]:
                continue
            overlap = pending.region.overlap(region)
            if overlap is Overlap.NO:
                continue
            if hazards is None:
                return True, looked
            found = True
            kind = "RAW" if reads else "WAW" if writes else "WAR"
            hazards.append(Hazard(kind, pending.access, event, overlap is Overlap.YES, fenced))
            if bounds is not None:
                bounds = hazards.bounds(event)
    return found, looked


def _relevant(blocks: Sequence[Block], budget: WorkBudget) -> tuple[list[list[Event]], bool]:
    """The events that can take part in a hazard, per block, and whether any async access has cluster scope.

    A generic write is kept only if its region may overlap some async access, a generic read only if it may
    overlap some async write: the others can never be reported, so the analysis need not carry them.
    """
    asyncs = [e for b in blocks for e in b.events if isinstance(e, Access) and e.kind.is_async]
    if not asyncs:
        return [[] for _ in blocks], False
    writes = _SpanIndex([(r, 0) for r in dict.fromkeys(e.region for e in asyncs
                                                       if e.kind is AccessKind.ASYNC_WRITE)])
    every = _SpanIndex([(r, 0) for r in dict.fromkeys(e.region for e in asyncs)])
    seen: dict = {}

    def keep(event: Event) -> bool:
        if not isinstance(event, Access) or event.kind.is_async:
            return True
        key = (event.kind, event.region)
        if key not in seen:
            seen[key] = (every if event.kind is AccessKind.GENERIC_WRITE else writes).any(event.region, budget)
        return seen[key]

    cluster_async = any(e.scope is Scope.CLUSTER for e in asyncs)
    return [[e for e in b.events if keep(e)] for b in blocks], cluster_async


STATS = {"block_runs": 0}  # blocks run by find_hazards' fixed point, summed over calls (tests bound the work)


def _reverse_post_order(blocks: Sequence[Block], entry: int) -> dict[int, int]:
    """Block -> its position in a reverse post-order of the blocks reachable from ``entry`` (iterative DFS)."""
    post: list[int] = []
    visited = {entry}
    stack = [(entry, iter(blocks[entry].successors))]
    while stack:
        node, successors = stack[-1]
        for successor in successors:
            if successor not in visited:
                visited.add(successor)
                stack.append((successor, iter(blocks[successor].successors)))
                break
        else:
            stack.pop()
            post.append(node)
    return {index: position for position, index in enumerate(reversed(post))}


class _Representatives:
    """Keeps, of the hazards appended, one per (async instruction, kind), as ``checker.representative_hazards``
    chooses it: a certain one if any, else one whose generic access comes first (the earliest line). A kernel can
    have millions of (writer, reader) pairs: they are not all kept."""

    def __init__(self):
        self.best: dict[tuple, Hazard] = {}
        self._keys: dict[tuple, tuple] = {}  # (id of the async Access, kind) -> (its instruction, kind)

    def _key(self, event: Access, kind: str) -> tuple:
        key = self._keys.get((id(event), kind))
        if key is None:
            key = self._keys[(id(event), kind)] = (event.instruction, kind)
        return key

    def append(self, hazard: Hazard) -> None:
        key = self._key(hazard.async_access, hazard.kind)
        held = self.best.get(key)
        if held is None or (not hazard.certain, hazard.generic.instruction.line) < \
                (not held.certain, held.generic.instruction.line):
            self.best[key] = hazard

    def bounds(self, event: Access) -> tuple[float, float]:
        """For a generic read and a generic write meeting ``event``: the line from which on one can no longer be
        chosen (that of a certain hazard held, else none)."""
        kinds = ("RAW", "RAW") if event.kind is AccessKind.ASYNC_READ else ("WAR", "WAW")
        lines = []
        for kind in kinds:
            held = self.best.get(self._key(event, kind))
            lines.append(held.generic.instruction.line if held is not None and held.certain else math.inf)
        return lines[0], lines[1]


def find_hazards(blocks: Sequence[Block], entry: int = 0, budget: WorkBudget | None = None,
                 representative: bool = False) -> list[Hazard]:
    """Run the may-analysis from ``blocks[entry]`` to a fixed point and return every hazard once (with
    ``representative``, only one per async instruction and kind: see ``_Representatives``).

    ``budget``: the work it may do (a new ``WorkBudget()`` if None); past it, ``WorkBudgetExceeded``."""
    budget = WorkBudget() if budget is None else budget
    budget.spend(len(blocks))
    events, cluster_async = _relevant(blocks, budget)
    if not any(isinstance(e, Access) for block_events in events for e in block_events):
        return []
    events = _barrier_bits(events, budget)
    cap = 1 + min(_MAX_AGE, max((e.pending for block_events in events for e in block_events
                                 if isinstance(e, CopyWait)), default=0))
    order = _reverse_post_order(blocks, entry)
    states: dict[int, _State] = {}
    # states that reached a block and are not joined into its state yet: a block that many others branch to
    # (a jump table's end) joins them all at once, not one union of everything so far per edge
    incoming: dict[int, list[_State]] = {entry: [_EMPTY]}
    # blocks in reverse post-order (a heap of RPO positions): every block runs after the blocks before it on
    # forward paths, so a chain or a tree of forward branches settles in one pass, and a loop is iterated as
    # a whole before what follows it (a LIFO worklist ran a chain of N predicated branches O(N^2) times)
    queue = [order[entry]]
    position_of = {position: index for index, position in order.items()}
    # a block whose in-state had copies in flight relative to different logs keeps them explicit from then on: its
    # state changes form only once, so the fixed point ends as with explicit states only
    explicit: set[int] = set()
    outs: dict[int, _State] = {}
    while queue:
        index = position_of[heapq.heappop(queue)]
        old = states.get(index)
        parts = incoming.pop(index) if old is None else [old] + incoming.pop(index)
        logs = [s.log for s in parts if s.issued]
        if index not in explicit and any(log != logs[0] for log in logs):
            explicit.add(index)
        state = _join(parts, cap, budget, index in explicit)
        if old is not None and state == old:
            continue
        states[index] = state
        STATS["block_runs"] += 1
        state = _run(state, events[index], None, cluster_async, cap, budget)
        before = outs.get(index)  # the same out-state as last time: the same object, so joins see it is nothing new
        if before is not None and before.size() == state.size() and before == state:
            state = before
        outs[index] = state
        budget.spend(len(blocks[index].successors) + state.size() // _BULK)
        for successor in blocks[index].successors:
            waiting = incoming.get(successor)
            if waiting is not None:
                waiting.append(state)
                continue
            known = states.get(successor)
            if known is not None and _covers(known, state, cap, budget, successor in explicit):
                continue
            incoming[successor] = [state]
            heapq.heappush(queue, order[successor])
    hazards = _Representatives() if representative else []
    for index in sorted(states):  # only a block with an async access can meet a pending one
        if any(isinstance(e, Access) and e.kind.is_async for e in events[index]):
            _run(states[index], events[index], hazards, cluster_async, cap, budget)
    if representative:
        return list(hazards.best.values())
    unique: dict[tuple, Hazard] = {}
    for hazard in hazards:
        key = (hazard.kind, hazard.generic.instruction, hazard.async_access.instruction)
        previous = unique.get(key)
        if previous is None or (hazard.certain and not previous.certain):
            unique[key] = hazard
    return list(unique.values())
