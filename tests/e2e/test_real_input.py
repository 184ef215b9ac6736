"""The main job on real-sized input: a 10,000+ event corpus posted twice over HTTP.

Issue 2, "Done when": the second pass is shuffled and cut into other batches; every
response is 200; Σ recus = distinct ids; the bilan equals a recomputation from the corpus
written apart from ``domain/`` (``tests.corpus.expected_bilan``).
"""

from __future__ import annotations

import random

from tests.conftest import LiveServer
from tests.corpus import batches, expected_bilan, generate


def test_corpus_posted_twice_in_any_order_gives_the_independent_bilan(
        server: LiveServer) -> None:
    corpus = generate(10_000, seed=2026)
    kinds = {e["type"] for e in corpus}
    outils = {e["outil"] for e in corpus if e["type"] == "correction"}
    assert len(corpus) >= 10_000 and kinds == {"delegation", "pilotage", "correction"}
    assert outils == {"Read", "Edit", "Write", "NotebookEdit", "Bash"}
    assert any(e["type"] == "pilotage" and len(e["demande_ids"]) > 1 for e in corpus)
    assert {e.get("agent_id") is None for e in corpus if e["type"] == "delegation"} == {
        True, False}

    rng = random.Random(7)
    second = corpus[:]
    rng.shuffle(second)
    recus = doublons = 0
    for batch in batches(corpus, rng) + batches(second, rng):
        response = server.post({"evenements": batch})
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["recus"] + answer["doublons"] == len(batch)
        recus += answer["recus"]
        doublons += answer["doublons"]

    assert recus == len({e["id"] for e in corpus})
    assert doublons == len(corpus)
    bilan = server.bilan()
    assert {k: bilan[k] for k in ("economies", "total")} == expected_bilan(corpus)
    assert bilan["provenance"]["evenements"] == recus
