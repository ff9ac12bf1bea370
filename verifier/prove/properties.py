"""The eight properties of a proof, each negated: "after this pass, the finding's condition
holds for some slot", stated exactly as the checker decides it (verifier/rules/).

A spec never reads or writes formulas, so the conditions here are about
identity, kinds, modalities, citations and where each item is. The one place
the checker asks the solver — whether the surviving witnesses of an item
support it (WR001, WR002) — is decided by the formulas the counterexample
chooses (replay.py): the item's formula is the conjunction of the atoms its
witnesses that survive before the pass show, each observation showing an atom
of its own. Then the item was checkable exactly when some witness survived,
and it lost support exactly when one of those left; no choice of formulas can
make either happen otherwise (support is monotone in the witnesses), so the
question "can some trace show the finding?" has the same answer.

What the checker reads, and the encoding with it (before = the window as the
pass starts, after = the window the spec returns, store = earlier spills plus
this pass's):

* a *bound* item: a commitment, or a claim that is load-bearing or
  negative-result (checker's view: its own modality ``failed``, a
  ``rejection``, or a witness that is a failed observation wherever the
  session last saw it — window, store, or removed);
* CF001: an item of before (not a stub) is neither in after nor in the store;
* CF004: a commitment in after cites a rationale that was in before as an
  item and is now in neither after nor the store;
* WR001 (count mode): a load-bearing or negative-result commitment or claim
  in both windows lost a witness that survived before (an observation in the
  window, or — for an item behind a stub — in the store);
* WR002: the same loss for an item that is neither, still ``verified``;
* WR004: a ``failed`` item (not behind a stub) changed modality;
* WR008: a ``failed`` observation left with no store record;
* TP001: a result in after whose call was in before and is not in after;
* TP002: a call in after whose results were in before and none is in after.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.prove.passes import PassEncoding
from verifier.prove.smt import Term
from verifier.prove.window import World

__all__ = ["PROPERTIES", "Violation", "violations"]

PROPERTIES: tuple[str, ...] = (
    "CF001",
    "CF004",
    "WR001",
    "WR002",
    "WR004",
    "WR008",
    "TP001",
    "TP002",
)
"""The rules a proof covers, in the order they are reported."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a property can fail: at a pass, for some slots, when ``term`` holds."""

    code: str
    pass_no: int
    items: tuple[int, ...]
    """The slots the finding names: the one it concerns first."""
    term: Term
    support: tuple[tuple[int, Term], ...] = ()
    """WR001/WR002: (witness slot, "survives before") — the formula the replay chooses."""


def _checker_negative(world: World, enc: PassEncoding, i: int) -> Term:
    """Negative-result as the checker decides it, on the version of i before the pass."""
    smt = world.smt
    slot = world.slots[i]
    st = enc.before[i]
    failed_witness = smt.or_(
        smt.and_([link, world.slots[j].kind["observation"], enc.before[j].mod["failed"]])
        for j, link in world.targets("witnesses", i)
    )
    return smt.or_(
        [
            st.mod["failed"],
            smt.and_([slot.kind["commitment"], slot.ctype["rejection"]]),
            failed_witness,
        ]
    )


def violations(world: World, enc: PassEncoding) -> dict[str, list[Violation]]:
    """Every way each property can fail at this pass."""
    smt = world.smt
    out: dict[str, list[Violation]] = {code: [] for code in PROPERTIES}
    p = enc.pass_no
    before, after = enc.before, enc.after
    n = len(world.slots)

    def add(
        code: str,
        items: tuple[int, ...],
        term: Term,
        support: tuple[tuple[int, Term], ...] = (),
    ) -> None:
        if not smt.is_false(term):
            out[code].append(Violation(code, p, items, term, support))

    stored_b = [smt.or_([st.stub, st.store]) for st in before]
    for i in range(n):
        slot = world.slots[i]
        if slot.is_summary and smt.is_false(enc.inb[i]):
            continue
        commitment, claim = slot.kind["commitment"], slot.kind["claim"]
        neg = _checker_negative(world, enc, i)
        heavy = smt.or_([slot.load_bearing, neg])
        bound = smt.or_([commitment, smt.and_([claim, heavy])])
        # CF001 commitment-dropped
        add("CF001", (i,), smt.and_([before[i].win, enc.removed[i], bound]))
        # CF004 rationale-dropped
        for r, link in world.targets("rationale", i):
            add(
                "CF004",
                (i, r),
                smt.and_([commitment, enc.present[i], link, before[r].win, enc.removed[r]]),
            )
        # WR001 / WR002: a witness that survived before and does not after. A witness
        # survives when it is an observation in the window (item or stub), or — for an
        # item behind a stub — in the store. For an item kept in the window, that is:
        # the witness was removed from the window, and the item is not (or did not become)
        # a stub while the witness is in the store (a stubbed witness, removed). Removal
        # and spill exclude each other, the store only grows, and an item in the window
        # as itself has no store record (the pin tests check this reading against the
        # checker's).
        kept = smt.and_([smt.or_([commitment, claim]), enc.present[i]])
        stub_after = smt.or_([before[i].stub, enc.spilled[i]])
        lost_terms = []
        support = []
        for j, link in world.targets("witnesses", i):
            obs = world.slots[j].kind["observation"]
            surv_b = smt.and_(
                [obs, smt.or_([enc.inb[j], smt.and_([before[i].stub, stored_b[j]])])]
            )
            support.append((j, smt.and_([link, surv_b])))
            if smt.is_false(enc.removed[j]):
                continue
            kept_by_store = smt.and_([stub_after, stored_b[j]])
            lost_terms.append(smt.and_([link, obs, enc.removed[j], smt.not_(kept_by_store)]))
        lost = smt.or_(lost_terms)
        add("WR001", (i,), smt.and_([kept, heavy, lost]), tuple(support))
        witnessed = smt.or_([after[i].mod["verified"], after[i].mod["failed"]])
        add("WR002", (i,), smt.and_([kept, smt.not_(heavy), lost, witnessed]), tuple(support))
        # WR004 negative-laundered
        modal = smt.or_([commitment, claim, slot.kind["observation"]])
        add(
            "WR004",
            (i,),
            smt.and_(
                [
                    modal,
                    enc.inb[i],
                    before[i].mod["failed"],
                    enc.present[i],
                    smt.not_(after[i].mod["failed"]),
                ]
            ),
        )
        # WR008 negative-evidence-evicted
        add(
            "WR008",
            (i,),
            smt.and_(
                [before[i].win, slot.kind["observation"], before[i].mod["failed"], enc.removed[i]]
            ),
        )
        # TP001 orphaned-tool-result: i is the result, its call was in the window and left
        for c, link in world.targets("call", i):
            add("TP001", (i, c), smt.and_([enc.present[i], link, enc.removed[c]]))
        # TP002 orphaned-tool-call: i is the call
        results = world.sources("call", i)
        if results:
            had = smt.or_(smt.and_([enc.inb[r], link]) for r, link in results)
            has = smt.or_(smt.and_([enc.present[r], link]) for r, link in results)
            add("TP002", (i,), smt.and_([enc.present[i], had, smt.not_(has)]))
    return out
