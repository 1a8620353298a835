"""Diagnosis scoring: alias-aware exact root-cause match, entity P/R/F1, NTAM (FL, FPC), chain LCS.

``correct`` (the paper's diagnosis pass) holds when the agent's contributing entities name every
ground-truth root cause (alias-aware) and nothing that is not a root cause. For a no-fault control,
``correct`` means the agent named no contributing entity ("no incident").
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..agents.base import Diagnosis
from ..scenario.spec import GroundTruth
from .chain import chain_score
from .entities import AliasIndex
from .ntam import NtamParams, NtamScorer
from .prf import PRF
from .topology import Topology


class DiagnosisScore(BaseModel):
    correct: bool = False
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    ntam_fl: float = 0.0
    ntam_fpc: float = 0.0
    chain_precision: float = 0.0
    chain_recall: float = 0.0
    chain_f1: float = 0.0
    matched: list[str] = Field(default_factory=list)
    """Predicted root-cause entities that hit a ground-truth root cause."""
    unmatched: list[str] = Field(default_factory=list)
    """Predicted root-cause entities that did not."""
    missed: list[str] = Field(default_factory=list)
    """Ground-truth root-cause groups nobody named."""
    reason: str | None = None
    """Why the score is 0 without comparison (no diagnosis, invalid output...)."""


def score_diagnosis(
    gt: GroundTruth,
    diagnosis: Diagnosis | None,
    topology: Topology | None = None,
    params: NtamParams | None = None,
    *,
    reason_if_missing: str | None = None,
) -> DiagnosisScore:
    if diagnosis is None:
        return DiagnosisScore(reason=reason_if_missing or "no diagnosis submitted")
    aliases = AliasIndex(gt)
    rc_classes = aliases.root_cause_classes()
    predicted = list(dict.fromkeys(e.name for e in diagnosis.entities if e.contributing_factor))
    matched, unmatched = [], []
    found: set[str] = set()
    for name in predicted:
        cls_id = aliases.class_of_name(name)
        if cls_id is not None and cls_id in rc_classes:
            matched.append(name)
            found.add(cls_id)
        else:
            unmatched.append(name)
    missed = sorted(rc_classes - found)
    n_pred, n_gt = len(predicted), len(rc_classes)
    prf = PRF.of(len(matched), n_pred, len(found), n_gt)
    correct = not missed and not unmatched and (n_pred > 0 or n_gt == 0)
    scorer = NtamScorer(gt, topology, params or NtamParams())
    all_named = list(
        dict.fromkeys(
            [e.name for e in diagnosis.entities]
            + [x for pr in diagnosis.propagations for x in (pr.source, pr.target)]
        )
    )
    chain = chain_score(gt, aliases, diagnosis.propagations, predicted)
    return DiagnosisScore(
        correct=correct,
        precision=prf.precision,
        recall=prf.recall,
        f1=prf.f1,
        ntam_fl=scorer.fault_localization(predicted),
        ntam_fpc=scorer.fault_propagation(all_named if n_gt else predicted),
        chain_precision=chain.precision,
        chain_recall=chain.recall,
        chain_f1=chain.f1,
        matched=matched,
        unmatched=unmatched,
        missed=missed,
    )
