"""The papers' own experiments, rerun on the shared Sina texts with the product's code (``newsdedup eval``).

(a) **SpotSigs paper, fig. 4**: pairwise precision and recall of Single-Pass clusters against the threshold
    0.1-0.9 on the text-level benchmark, for SpotSigs as the paper runs it (Jaccard only) with its optimized
    and its basic antecedents, our default (containment fallback on), and MinHash-LSH with the paper's k=6
    rows and l=32 bands over the same spot signatures (candidates verified by their estimated Jaccard).
(b) **Semantic-fingerprint paper, fig. 2**: the share of copies recognised when 1-20% of the characters are
    added (sentences of 50 other articles) or deleted (sentence-sized spans) at random positions, and after
    1 to all sentences are moved; Simhash 64-bit k=3 and Shingling (word 3-shingles, Jaccard >= 0.95, the
    paper's setting) against E-Simhash, SpotSigs and the hybrid.
(c) **E-Simhash paper, fig. 5**: the dedup rate at 5/10/15/20% of the characters touched by a random mix of
    modify / delete / move / replace, for Simhash, E-Simhash (128-bit, k=10, W_t 90), the paper's Simhash
    setting (128-bit, k=10), SpotSigs, hybrid and I-Match.

Every product row goes through :class:`newsdedup.evaluation.methods.Runner`: the product's features and its
exact stage and Single-Pass, with the papers' parameters.  In (b) and (c) each edit level is one stream: the
``bases`` originals (800+ characters, as the E-Simhash paper keeps; test split, drawn with ``seed``) followed by
one copy of each.  A copy is recognised when Single-Pass puts it in its own original's cluster, ``wrong`` when
in another original's.  E-Simhash learns its corpus statistics from the stream, as it does in a crawl.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from newsdedup.dedup.features import DocFeatures, FeatureConfig
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.evaluation.baselines import IMatchBaseline, MinHashLSHBaseline, ShinglingBaseline
from newsdedup.evaluation.markdown import cell, table
from newsdedup.evaluation.methods import PAPER, MethodRun, MethodSpec, Runner, describe
from newsdedup.evaluation.reprints import join_units, pick_bases, sentence_edit_ratio, split_units
from newsdedup.evaluation.scoring import pair_counts

FIG4_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: Every 1% up to 6%, where the curves fall fastest, then every 2% up to 20%.
FIG2_SHARES = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.12, 0.14, 0.16, 0.18, 0.20)
FIG5_SHARES = (0.05, 0.10, 0.15, 0.20)
PLOT_FILES = {"spotsigs_fig4": "paper-spotsigs-fig4.png", "fingerprint_fig2": "paper-fingerprint-fig2.png",
              "esimhash_fig5": "paper-esimhash-fig5.png"}
#: What each paper reports for the figure rerun here.
PAPER_FIGURES: dict[str, dict] = {
    "spotsigs_fig4": {
        "data": "125 pages of sohu, qq, sina and 163 (5 channels), 49 singletons, 16 pairs, 12 triples, 2 quadruples",
        "reported": "SpotSigs found every true pair with no false positive for tau 0.35-0.5 (3 false negatives at "
                    "tau 0.6); LSH (k=6, l=32) missed some true pairs there; for tau 0.1-0.35 LSH had the higher "
                    "precision; optimized antecedents raised recall slightly over basic ones.",
    },
    "fingerprint_fig2": {
        "data": "1,000 texts of a 'mobile phone' web corpus (news, blogs, forums); additions from 50 texts",
        "reported": "Simhash (64-bit, Hamming <= 3) recognises >= 70% of copies with up to 5% of the text added or "
                    "deleted; the added curve lies above the deleted one; Shingling (Jaccard > 0.95) falls faster; "
                    "after sentence reordering Simhash recognises 86.1%, Shingling 6.1%.",
        "simhash_min_rate_at_5pct": 0.70, "reorder": {"simhash": 0.861, "shingling": 0.061},
    },
    "esimhash_fig5": {
        "data": "Sogou news 2012, 1,565 articles of 800+ characters, 1,162 modified",
        "reported": "Dedup rate at 5/10/15/20% modification, 128-bit fingerprints, Hamming distance 10, W_t 90: "
                    "E-Simhash 0.833/0.751/0.687/0.661, Simhash 0.679/0.529/0.476/0.451.",
        "rows": [{"modification": m, "esimhash": e, "simhash": s} for m, e, s in
                 ((0.05, 0.833, 0.679), (0.10, 0.751, 0.529), (0.15, 0.687, 0.476), (0.20, 0.661, 0.451))],
    },
}


def spot_keys(features: DocFeatures) -> list[int]:
    """The distinct spot signatures of a document: what MinHash-LSH hashes in (a)."""
    return list(features.spots or ())


def _spotsigs_fig4(runner: Runner, docs: Sequence[Mapping]) -> dict:
    variants = (("spotsigs-paper", "SpotSigs, paper (optimized antecedents, Jaccard only)", "optimized",
                 PAPER["spotsigs"]),
                ("spotsigs-paper-basic", "SpotSigs, paper (basic antecedents, Jaccard only)", "basic",
                 PAPER["spotsigs"]),
                ("spotsigs", f"SpotSigs, default ({describe(NearSettings())})", "optimized", NearSettings()))
    specs = [(tau, MethodSpec(name, "paper", label, FeatureConfig(antecedents=antecedents),
                              replace(near, spotsigs_tau=tau)))
             for name, label, antecedents, near in variants for tau in FIG4_THRESHOLDS]
    lsh_label = "MinHash-LSH k=6 l=32 over spot signatures, verified"
    specs += [(tau, MethodSpec("minhash-lsh", "baseline", lsh_label, FeatureConfig(), baseline=partial(
        MinHashLSHBaseline, threshold=tau, bands=32, rows=6, features=spot_keys))) for tau in FIG4_THRESHOLDS]
    (runs,) = runner.run([[(d["id"], d["text"]) for d in docs]], [spec for _, spec in specs])
    gold = {d["id"]: d["story"] for d in docs}
    rows = []
    for (tau, spec), run in zip(specs, runs):
        counts = pair_counts(gold, run.predicted)
        rows.append({"method": spec.name, "threshold": tau, "precision": round(counts.precision, 4),
                     "recall": round(counts.recall, 4), "f1": round(counts.f1, 4), "true_pairs": counts.true_pairs,
                     "predicted_pairs": counts.predicted_pairs, "correct_pairs": counts.correct_pairs})
    return {"title": "SpotSigs paper, fig. 4: precision and recall against the similarity threshold",
            "protocol": f"Single-Pass clusters of the {len(docs)}-document text-level reprint benchmark (test split), "
                        "pairwise precision/recall at thresholds 0.1-0.9.",
            "docs": len(docs), "methods": _labels(spec for _, spec in specs), "rows": rows,
            "paper": PAPER_FIGURES["spotsigs_fig4"]}


def _labels(specs) -> list[dict]:
    return [{"name": name, "label": label} for name, label in dict.fromkeys((s.name, s.description) for s in specs)]


def _recognition(runner: Runner, key: str, title: str, edits: str, originals: Sequence[tuple[str, str]],
                 levels: Sequence[tuple[dict, list[str]]], specs: Sequence[MethodSpec]) -> dict:
    """Experiment ``key``: a row per level and method, how many copies joined their own original, or another's."""
    streams = [[*originals, *((f"copy:{k}", copy) for (k, _), copy in zip(originals, copies))] for _, copies in levels]
    rows = []
    for (level, _), runs in zip(levels, runner.run(streams, specs)):
        for run in runs:
            recognised, wrong = _recognised(run, [k for k, _ in originals])
            rows.append({**level, "method": run.spec.name, "rate": round(recognised / len(originals), 4),
                         "recognised": recognised, "wrong": wrong, "copies": len(originals)})
    return {"title": title, "protocol": f"{len(originals)} pool articles of 800+ characters, each followed by a copy "
                                        f"with {edits}; recognised: the copy joins its own original's cluster.",
            "bases": len(originals), "methods": _labels(specs), "rows": rows, "paper": PAPER_FIGURES[key]}


def _recognised(run: MethodRun, originals: Sequence[str]) -> tuple[int, int]:
    clusters = {run.predicted[key] for key in originals}
    own = sum(run.predicted[f"copy:{key}"] == run.predicted[key] for key in originals)
    other = sum(run.predicted[f"copy:{key}"] != run.predicted[key] and run.predicted[f"copy:{key}"] in clusters
                for key in originals)
    return own, other


def _fingerprint_methods() -> list[MethodSpec]:
    both = FeatureConfig(method="hybrid")  # a Simhash and the spots from one segmentation
    return [MethodSpec("simhash", "paper", "Simhash 64-bit k=3", both, NearSettings(method="simhash")),
            MethodSpec("esimhash", "paper", "E-Simhash 128-bit k=10 W_t 90", FeatureConfig(method="esimhash"),
                       NearSettings(method="esimhash")),
            MethodSpec("spotsigs", "product", f"SpotSigs (default: {describe(NearSettings())})", both, NearSettings()),
            MethodSpec("hybrid", "product", "hybrid (SpotSigs, else Simhash k=3)", both, NearSettings(method="hybrid"))]


def run_paper_experiments(data_dir: Path, out_dir: Path, *, benchmark_docs: Sequence[dict], seed: int = 1,
                          bases: int = 200, workers: int | None = None,
                          progress: Callable[[str], None] | None = None) -> dict:
    """Run (a), (b) and (c) (see the module docstring) and write their PNGs into ``out_dir``.

    ``benchmark_docs``: the text-level benchmark for (a); ``bases``: originals of (b) and (c), drawn from the
    test half of the cleaned Sina pool in ``data_dir`` with ``seed``.  Returns a JSON-serialisable dict.
    """
    if not isinstance(bases, int) or bases < 1:
        raise ValueError(f"bases must be an integer >= 1 (the default is 200), got {bases!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    originals, editor = pick_bases(Path(data_dir), bases, rng)
    seconds: dict[str, float] = {}
    with Runner(workers, progress) as runner:
        started = time.perf_counter()
        fig4 = _spotsigs_fig4(runner, benchmark_docs)
        seconds["spotsigs_fig4"] = round(time.perf_counter() - started, 1)

        started = time.perf_counter()
        levels = [({"operation": op, "share": share}, [edit(text, share) for _, text in originals])
                  for share in FIG2_SHARES for op, edit in (("add", editor.add_chars), ("delete", editor.delete_chars))]
        reordered = []
        for _, text in originals:
            units = split_units(text)
            reordered.append(join_units(editor.reorder(units, moved=rng.randint(1, len(units)))))
        moved = sum(sentence_edit_ratio(t, r) for (_, t), r in zip(originals, reordered)) / len(originals)
        levels.append(({"operation": "reorder", "share": round(moved, 4)}, reordered))
        specs = [*_fingerprint_methods(), MethodSpec("shingling", "baseline", "Shingling word 3-shingles, Jaccard >= "
                                                     "0.95", baseline=partial(ShinglingBaseline, threshold=0.95))]
        fig2 = _recognition(runner, "fingerprint_fig2", "Semantic-fingerprint paper, fig. 2: recognition rate "
                            "against added / deleted text, and reordering", "1-20% of its characters added (donor "
                            "sentences) or deleted (sentence-sized spans) at random positions, or with 1 to all "
                            "sentences moved", originals, levels, specs)
        seconds["fingerprint_fig2"] = round(time.perf_counter() - started, 1)

        started = time.perf_counter()
        levels = [({"modification": share}, [editor.modify_chars(text, share) for _, text in originals])
                  for share in FIG5_SHARES]
        specs = [*_fingerprint_methods(), MethodSpec(
            "simhash-128-k10", "paper", "Simhash 128-bit k=10 (E-Simhash paper's baseline setting)",
            FeatureConfig(method="simhash", simhash_bits=128),
            NearSettings(method="simhash", simhash_bits=128, simhash_max_distance=10)),
            MethodSpec("i-match", "baseline", "I-Match, collection IDF band [0.2, 0.95]", baseline=IMatchBaseline)]
        fig5 = _recognition(runner, "esimhash_fig5", "E-Simhash paper, fig. 5: dedup rate against the modification "
                            "share", "exactly 5/10/15/20% of its characters touched by a random mix of modify / delete / "
                            "move / replace (the dedup rate is the share recognised)", originals, levels, specs)
        seconds["esimhash_fig5"] = round(time.perf_counter() - started, 1)
    result = {"spotsigs_fig4": fig4, "fingerprint_fig2": fig2, "esimhash_fig5": fig5}
    for key, draw in (("spotsigs_fig4", _plot_fig4), ("fingerprint_fig2", _plot_fig2), ("esimhash_fig5", _plot_fig5)):
        result[key]["plot"] = PLOT_FILES[key]
        figure = draw(result[key])
        figure.tight_layout()
        figure.savefig(out_dir / PLOT_FILES[key])
    return {**result, "plots": list(PLOT_FILES.values()), "seconds": seconds, "seed": seed}


# --------------------------------------------------------------------------------------------- plots
# matplotlib's object API with the Agg canvas: no pyplot, no global backend switch.  Marker and line style per
# method, so that curves lying on top of each other stay visible.
_STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--"), ("X", "-."))


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(figure)
    return figure


def _curves(axes, experiment: Mapping, x: str, y: str, scale: float = 1.0, **match) -> None:
    for method, (marker, style) in zip(experiment["methods"], _STYLES):
        rows = [r for r in experiment["rows"] if r["method"] == method["name"] and
                all(r[k] == v for k, v in match.items())]
        axes.plot([scale * r[x] for r in rows], [r[y] for r in rows], marker=marker, ls=style, markersize=4,
                  label=method["name"])
    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)


def _plot_fig4(experiment: Mapping):
    figure = _figure(10, 4)
    for position, measure in enumerate(("precision", "recall"), 1):
        axes = figure.add_subplot(1, 2, position)
        _curves(axes, experiment, "threshold", measure)
        axes.set(xlabel="similarity threshold", ylabel=measure, title=f"{measure} (pairwise)")
    figure.axes[0].legend(fontsize=8)
    figure.suptitle(f"SpotSigs paper fig. 4 on the reprint benchmark ({experiment['docs']} docs)")
    return figure


def _plot_fig2(experiment: Mapping):
    figure = _figure(13, 4)
    for position, (operation, title) in enumerate((("add", "text added"), ("delete", "text deleted")), 1):
        axes = figure.add_subplot(1, 3, position)
        _curves(axes, experiment, "share", "rate", 100, operation=operation)
        axes.axhline(PAPER_FIGURES["fingerprint_fig2"]["simhash_min_rate_at_5pct"], color="grey", ls=":", lw=1)
        axes.set(xlabel=f"{title} (% of characters)", ylabel="recognition rate", title=title)
    figure.axes[0].legend(fontsize=8)
    axes = figure.add_subplot(1, 3, 3)
    reorder = {r["method"]: r["rate"] for r in experiment["rows"] if r["operation"] == "reorder"}
    names = [m["name"] for m in experiment["methods"]]
    axes.bar(range(len(names)), [reorder[n] for n in names], color="tab:blue")
    paper = PAPER_FIGURES["fingerprint_fig2"]["reorder"]
    axes.plot([i for i, n in enumerate(names) if n in paper], [paper[n] for n in names if n in paper], "_",
              markersize=22, color="red")
    axes.set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    axes.set(ylim=(0, 1.02), title="sentences reordered (red: paper)")
    figure.suptitle(f"Semantic-fingerprint paper fig. 2 on {experiment['bases']} Sina articles")
    return figure


def _plot_fig5(experiment: Mapping):
    figure = _figure(7, 4.5)
    axes = figure.add_subplot(1, 1, 1)
    _curves(axes, experiment, "modification", "rate", 100)
    paper = experiment["paper"]["rows"]
    for name, color in (("esimhash", "black"), ("simhash", "grey")):
        axes.plot([100 * r["modification"] for r in paper], [r[name] for r in paper], ls="--", marker="x",
                  color=color, label=f"{name} (paper)")
    axes.set(xlabel="modification (% of characters)", ylabel="dedup rate", xticks=[100 * s for s in FIG5_SHARES],
             title=f"E-Simhash paper fig. 5 on {experiment['bases']} Sina articles")
    axes.legend(fontsize=8)
    return figure


# ------------------------------------------------------------------------------------------ markdown


def _section(experiment: Mapping, header: Sequence[str], body: Sequence[Sequence[str]], image: str) -> list[str]:
    wrong = {m["name"]: sum(r.get("wrong", 0) for r in experiment["rows"] if r["method"] == m["name"])
             for m in experiment["methods"]}
    lines = [f"### {experiment['title']}", "", experiment["protocol"], "",
             "Methods: " + "; ".join(f"`{m['name']}` {m['label']}" for m in experiment["methods"]) + ".", "",
             *table(header, body), ""]
    if "copies" in experiment["rows"][0]:
        lines += ["Copies put with another original (all levels): " + ", ".join(f"{k} {v}" for k, v in wrong.items())
                  + ".", ""]
    return lines + [f"![{image}]({experiment['plot']})", "", f"Paper: {experiment['paper']['reported']}", ""]


def format_markdown(result: Mapping) -> str:
    """The three experiments as Markdown: protocol, table, image link and the paper's figures."""
    fig4, fig2, fig5 = result["spotsigs_fig4"], result["fingerprint_fig2"], result["esimhash_fig5"]
    names = [m["name"] for m in fig4["methods"]]
    at = {(r["method"], r["threshold"]): r for r in fig4["rows"]}
    lines = _section(fig4, ["tau", *(f"{n} P / R" for n in names)], [
        [f"{tau:.1f}", *(f"{cell(at[n, tau]['precision'])} / {cell(at[n, tau]['recall'])}" for n in names)]
        for tau in FIG4_THRESHOLDS], "SpotSigs fig. 4")
    names = [m["name"] for m in fig2["methods"]]
    at = {(r["method"], r["operation"], r["share"]): r["rate"] for r in fig2["rows"]}
    reorder = {r["method"]: r for r in fig2["rows"] if r["operation"] == "reorder"}
    body = [[f"{round(100 * s)}%", *(f"{cell(at[n, 'add', s])} / {cell(at[n, 'delete', s])}" for n in names)]
            for s in FIG2_SHARES]
    moved = next(iter(reorder.values()))["share"]
    body.append([f"reorder ({round(100 * moved)}% of sentences moved)", *(cell(reorder[n]["rate"]) for n in names)])
    lines += _section(fig2, ["changed", *(f"{n} add / del" for n in names)], body, "Semantic fingerprint fig. 2")
    names = [m["name"] for m in fig5["methods"]]
    at = {(r["method"], r["modification"]): r["rate"] for r in fig5["rows"]}
    paper = {r["modification"]: r for r in fig5["paper"]["rows"]}
    body = [[f"{round(100 * s)}%", *(cell(at[n, s]) for n in names), cell(paper[s]["esimhash"]),
             cell(paper[s]["simhash"])] for s in FIG5_SHARES]
    lines += _section(fig5, ["modified", *names, "paper E-Simhash", "paper Simhash"], body, "E-Simhash fig. 5")
    return "\n".join(lines + ["Seconds: " + ", ".join(f"{k} {v}" for k, v in result.get("seconds", {}).items()) + "."])
