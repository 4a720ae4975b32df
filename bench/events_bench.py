"""Typed event parsing and stream checking, orspec against its peers, as ratios to raw `orjson.loads`.

The stream is `../shared/bench/make_stream.py N` (20 000 text deltas by default). Every variant
runs over the same list of `data:` payloads (bytes), alternating in one run so machine load
affects them alike; the figure to quote is the ratio of best times to raw `orjson.loads` (speed as a
fraction of it; higher is better), since absolute times swing with the machine.

The peers (the `bench` extra installs them; one that does not import is skipped, with the reason):

- openresponses-types: plain datamodel-code-generator models without an event union; its users
  dispatch on `type` by hand, so the bench does `orjson.loads`, picks the class, `model_validate`.
- openresponses-py (`openresponses`): its tagged event union `StreamingEventAdapter` (a TypeAdapter
  with a callable discriminator and an unknown-type fallback): from JSON, fed `orjson` dicts, and as
  its own client decodes (`json.loads`, then the adapter). The goal compares with the fastest of these.
- the openai SDK, two rows: its real path, as its `Stream` decodes each event (`json.loads`, then
  `construct_type` into `ResponseStreamEvent`, which builds models WITHOUT validating them, so it
  does less work than every other row); and its union through a pydantic TypeAdapter, which
  validates but is not how the SDK parses (the union carries no discriminator there).
- the limit for validated parsing: a bare pydantic-core `SchemaValidator` over the same event
  union schema orspec's `parse_event` uses, called directly.

Every goal is printed MET or NOT MET.

    python bench/events_bench.py [--deltas N] [--repeat N]
"""

from __future__ import annotations

import argparse
import enum
import json
import statistics
import subprocess
import sys
import time
import typing
from collections.abc import Callable
from pathlib import Path

import orjson
from openresponses_runtime.events import EVENT_ADAPTER, iter_sse, parse_event
from openresponses_runtime.streaming import StreamChecker
from pydantic import BaseModel, TypeAdapter
from pydantic_core import CoreConfig, SchemaValidator

ROOT = Path(__file__).resolve().parents[1]
MAKE_STREAM = ROOT.parent / "shared" / "bench" / "make_stream.py"

RAW = "orjson.loads (raw, the limit)"
HAND = "openresponses-types, hand dispatch"
ORPY = "openresponses-py StreamingEventAdapter"
ORPY_DICT = "openresponses-py adapter on orjson dicts"
ORPY_CLIENT = "openresponses-py as its client decodes"
OPENAI = "openai SDK union via TypeAdapter (not its path)"
OPENAI_SDK = "openai SDK real path (construct, no validation)"
CORE = "bare pydantic-core validator (the limit)"
PARSE = "orspec parse_event"
PARSE_CHECK = "orspec parse + StreamChecker"


def capture(deltas: int) -> bytes:
    return subprocess.run([sys.executable, str(MAKE_STREAM), str(deltas)], capture_output=True, check=True).stdout


def hand_dispatch_table() -> dict[str, type[BaseModel]]:
    """openresponses-types' streaming event classes by the `type` value their `type` field accepts."""
    import openresponses_types

    table: dict[str, type[BaseModel]] = {}
    for name in dir(openresponses_types):
        cls = getattr(openresponses_types, name)
        if not (isinstance(cls, type) and issubclass(cls, BaseModel) and name.endswith("StreamingEvent")):
            continue
        field = cls.model_fields.get("type")
        kind = field.annotation if field else None
        if isinstance(kind, type) and issubclass(kind, enum.Enum):  # it spells each tag as a one-member enum
            table.update({member.value: cls for member in kind})
        elif typing.get_origin(kind) is typing.Literal:
            table.update(dict.fromkeys(typing.get_args(kind), cls))
    if not table:
        raise ImportError("no *StreamingEvent classes with a fixed `type` found in openresponses_types")
    return table


def peers(payloads: list[bytes]) -> tuple[dict[str, Callable[[], None]], dict[str, str]]:
    """The peer variants that import, and why each other one is skipped."""
    variants: dict[str, Callable[[], None]] = {}
    skipped: dict[str, str] = {}

    try:
        table = hand_dispatch_table()
    except ImportError as exc:
        skipped[HAND] = f"openresponses-types does not import ({exc}); pip install openresponses-types"
    else:

        def hand() -> None:
            for data in payloads:
                event = orjson.loads(data)
                table[event["type"]].model_validate(event)

        variants[HAND] = hand

    try:
        from openresponses.types.protocol import StreamingEventAdapter
    except ImportError as exc:
        skipped[ORPY] = f"openresponses-py does not import ({exc}); pip install openresponses-py"
    else:

        def orpy() -> None:
            validate = StreamingEventAdapter.validate_json
            for data in payloads:
                validate(data)

        def orpy_dicts() -> None:
            validate = StreamingEventAdapter.validate_python
            for data in payloads:
                validate(orjson.loads(data))

        def orpy_client() -> None:  # json.loads, then the adapter: what openresponses.streaming does per event
            validate = StreamingEventAdapter.validate_python
            for data in payloads:
                validate(json.loads(data))

        variants[ORPY] = orpy
        variants[ORPY_DICT] = orpy_dicts
        variants[ORPY_CLIENT] = orpy_client

    try:
        from openai.types.responses import ResponseStreamEvent
    except ImportError as exc:
        skipped[OPENAI] = f"openai does not import ({exc}); pip install openai"
    else:
        from openai._models import construct_type

        adapter = TypeAdapter(ResponseStreamEvent)

        def openai_adapter() -> None:
            validate = adapter.validate_json
            for data in payloads:
                validate(data)

        def openai_sdk() -> None:  # what openai's Stream does per event: sse.json(), then construct_type
            for data in payloads:
                construct_type(type_=ResponseStreamEvent, value=json.loads(data))

        variants[OPENAI_SDK] = openai_sdk
        variants[OPENAI] = openai_adapter
    return variants, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    raw = capture(args.deltas)
    messages = [(m.event, m.data.encode()) for m in iter_sse(raw)]
    payloads = [data for _, data in messages if data != b"[DONE]"]

    def raw_loads() -> None:
        for data in payloads:
            orjson.loads(data)

    core = SchemaValidator(EVENT_ADAPTER.core_schema, CoreConfig(cache_strings=False))

    def bare_core() -> None:
        validate = core.validate_json
        for data in payloads:
            validate(data)

    def typed() -> None:
        parse = parse_event  # a local, as the peers bind their validate methods
        for data in payloads:
            parse(data)

    def parsed_and_checked() -> None:
        checker = StreamChecker()
        for name, data in messages:
            checker.feed(name, data)  # returns the typed event, validated once for both
        assert not checker.finish()

    def rules_only() -> None:
        checker = StreamChecker(schema=False)
        for name, data in messages:
            checker.feed(name, data)
        assert not checker.finish()

    def framing() -> None:
        for _ in iter_sse(raw):
            pass

    def whole() -> None:
        assert not StreamChecker().check_sse(raw)

    peer_variants, skipped = peers(payloads)
    variants: dict[str, Callable[[], None]] = {
        RAW: raw_loads,
        **peer_variants,
        CORE: bare_core,
        PARSE: typed,
        PARSE_CHECK: parsed_and_checked,
        "orspec StreamChecker, rules only": rules_only,
        "orspec iter_sse framing only": framing,
        "orspec check_sse (framing+schema+rules)": whole,
    }
    for name, run in variants.items():  # each must get through the whole stream before it is timed
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - a peer that rejects the stream is reported, not timed
            skipped[name] = f"fails on this stream: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    for name in skipped:
        variants.pop(name, None)

    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    base = min(times[RAW])
    ratio = {name: base / min(runs) for name, runs in times.items()}
    print(
        f"{len(payloads)} events, {len(raw) / 1e6:.1f} MB, best of {args.repeat} alternating runs; "
        "ratio = best raw orjson.loads / best variant"
    )
    print(f"{'variant':50} {'best':>9} {'median':>9} {'events/s':>11} {'ratio to raw':>13}")
    for name, runs in times.items():
        best, median = min(runs), statistics.median(runs)
        print(
            f"{name:50} {best * 1000:7.1f}ms {median * 1000:7.1f}ms {len(payloads) / best:11,.0f} {ratio[name]:13.3f}"
        )
    for name, reason in skipped.items():
        print(f"{name:50} {'skipped':>9}: {reason}")

    print("\ngoals:")
    orpy = max((name for name in (ORPY, ORPY_DICT, ORPY_CLIENT) if name in ratio), key=ratio.get, default=ORPY)
    goals = [
        (PARSE, CORE, 0.9),
        (PARSE, HAND, 1.4),
        (PARSE, orpy, 2.0),
        (PARSE_CHECK, HAND, 1.0),
    ]
    for ours, peer, target in goals:
        if ours not in ratio or peer not in ratio:
            print(f"  {ours} / {peer}: not measured ({skipped.get(peer) or skipped.get(ours)}) NOT MET")
            continue
        got = ratio[ours] / ratio[peer]
        print(f"  {ours} / {peer}: {got:.2f}x (goal >= {target}x) {'MET' if got >= target else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
