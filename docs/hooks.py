"""MkDocs hooks: the pages written from the repository's own files, so nothing is written twice.

A page holds a marker line ``<!-- generated: NAME -->``; ``on_page_markdown`` replaces it with
the text of ``NAME`` below:

``configuration``  every key of ``workflow/schemas/config.schema.yaml``: path, type, default,
                   description.
``outputs``        the fields of the result-file schemas in ``workflow/schemas/``.
``captions PREFIX`` the captions of a study's report figures, ``workflow/report/PREFIX_*.rst``.
``performance``    ``docs/performance/measurements.yaml`` (an entry with ``from: CASE`` written
                   from that case's committed result) and the benchmark results, those of
                   ``results/benchmarks/*.json`` of this checkout first, then the committed
                   snapshots ``docs/performance/*.json``; each with its date, machine, command
                   and lock.

``mkdocs build --strict`` runs these on every build, which is their test.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "workflow" / "schemas"
PERFORMANCE = ROOT / "docs" / "performance"
MARKER = re.compile(r"^<!-- generated: (\w+)(?: (\w+))? -->$", re.M)
REPORT = ROOT / "workflow" / "report"


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](*filter(None, [m.group(2)])), markdown)


# ---- shared -------------------------------------------------------------------------------------


def cell(text) -> str:
    """One table cell: no line breaks, pipes escaped, and brackets outside code spans (a regular
    expression such as [A-E][1-5] would read as a Markdown link)."""
    parts = " ".join(str(text).split()).replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("[", "\\[").replace("]", "\\]") for i, p in enumerate(parts))


def type_of(node: dict) -> str:
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    kind = node.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    text = " or ".join(k for k in kinds if k)
    if "array" in kinds and isinstance(node.get("items"), dict):
        text = text.replace("array", f"array of {type_of(node['items']) or 'values'}")
    limits = [
        f"{sign} {node[key]}"
        for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
        if key in node
    ]
    return text + (f" ({', '.join(limits)})" if limits else "")


# ---- configuration ------------------------------------------------------------------------------


def resolve(node: dict, schema: dict) -> dict:
    """``node`` with its ``$ref`` merged in (the referring node's own keys win)."""
    while "$ref" in node:
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def config_rows(node: dict, path: str, schema: dict, rows: list, when: str = "") -> None:
    """One row per key under ``node``; ``when`` names the value a key depends on (a data set's
    ``source``: the schema's if/then branches)."""
    node = resolve(node, schema)
    if path:
        default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
        rows.append((path, type_of(node), default, f"*{when}:* " * bool(when) + node.get("description", "")))
    for key, child in node.get("properties", {}).items():
        config_rows(child, f"{path}.{key}" if path else key, schema, rows, when)
    if isinstance(node.get("additionalProperties"), dict):
        config_rows(node["additionalProperties"], f"{path}.<name>", schema, rows, when)
    for branch in node.get("allOf", []):
        condition = branch.get("if", {}).get("properties", {})
        label = ", ".join(f"{k} = {v['const']}" for k, v in condition.items() if "const" in v)
        then = resolve(branch.get("then", {}), schema)
        for key, child in then.get("properties", {}).items():
            if key not in condition:
                config_rows(child, f"{path}.{key}", schema, rows, label)


def configuration() -> str:
    schema = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
    out = [f"_{cell(schema['description'])}_", ""]
    for key in schema["properties"]:
        rows: list = []
        config_rows(schema["properties"][key], key, schema, rows)
        if key == "studies":  # one section per study
            out.append(section(key, rows[:1]))
            for study in schema["properties"]["studies"]["properties"]:
                out.append(section(f"studies.{study}", [r for r in rows if r[0].startswith(f"studies.{study}")]))
        else:
            out.append(section(key, rows))
    return "\n".join(out)


def section(title: str, rows: list) -> str:
    lines = [f"## `{title}`", "", "| key | type | default | description |", "|---|---|---|---|"]
    lines += [f"| `{cell(p)}` | {cell(t)} | {cell(d)} | {cell(s)} |" for p, t, d, s in rows]
    return "\n".join(lines) + "\n"


# ---- outputs ------------------------------------------------------------------------------------


def outputs() -> str:
    out = []
    for path in sorted(SCHEMAS.glob("*.schema.yaml")):
        if path.name == "config.schema.yaml":
            continue
        schema = yaml.safe_load(path.read_text())
        required = set(schema.get("required", []))
        out += [
            f"## {schema.get('title', path.stem)}",
            "",
            f"`workflow/schemas/{path.name}`. {cell(schema.get('description', ''))}",
            "",
            "| field | type | required | description |",
            "|---|---|---|---|",
        ]
        for key, node in schema.get("properties", {}).items():
            out.append(
                f"| `{key}` | {cell(type_of(node))} | {'yes' if key in required else ''} | "
                f"{cell(node.get('description', ''))} |"
            )
            inner = node.get("properties") or node.get("items", {}).get("properties", {})
            inner_required = set(node.get("required", []) or node.get("items", {}).get("required", []))
            for sub, subnode in inner.items():
                out.append(
                    f"| `{key}.{sub}` | {cell(type_of(subnode))} | {'yes' if sub in inner_required else ''} | "
                    f"{cell(subnode.get('description', ''))} |"
                )
            for sub in sorted(inner_required - set(inner)):
                out.append(f"| `{key}.{sub}` |  | yes |  |")
        out.append("")
    return "\n".join(out)


# ---- captions -----------------------------------------------------------------------------------


def captions(prefix: str) -> str:
    paths = sorted(REPORT.glob(f"{prefix}_*.rst"))
    if not paths:
        raise ValueError(f"no captions workflow/report/{prefix}_*.rst")
    return (
        "\n".join(
            f"- **{p.stem.removeprefix(prefix + '_').replace('_', ' ')}** (`{p.name}`): {cell(p.read_text())}"
            for p in paths
        )
        + "\n"
    )


# ---- performance --------------------------------------------------------------------------------


def flatten(value, prefix=""):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from flatten(inner, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        yield prefix, ", ".join(number(v) for v in value)
    elif not isinstance(value, list):
        yield prefix, number(value)


def number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def provenance(date, machine, command, lock) -> str:
    return f"**Date** {date} · **machine** {machine} · **command** `{command}` · **lock** {lock}"


def benchmark(result: dict, date: str, machine: str, command: str, lock: str) -> str:
    rows = [(k, v) for k, v in flatten(result) if k not in ("case",) and not k.startswith(("versions", "device"))]
    lines = [
        f"### `{result['case']}`",
        "",
        provenance(date, machine, command, lock),
        "",
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| `{cell(k)}` | {cell(v)} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def machine_of(result: dict) -> str:
    device = result.get("device", {})
    return f"{device.get('platform', '?')} ({device.get('device', '?')}), {result.get('cpu_count', '?')} CPU cores"


def measured(m: dict) -> dict:
    """A measurement written from a benchmark case's committed result (``from: CASE``, the file
    ``docs/performance/CASE.json``): its body's ``{figure}`` fields filled from the result, its
    date, machine, command and lock those of the snapshot, so that no figure is typed twice.
    Without a snapshot the entry says how to make one rather than show a figure."""
    path = PERFORMANCE / f"{m['from']}.json"
    if not path.is_file():
        return {
            **m,
            **dict.fromkeys(("date", "machine", "lock"), "not measured"),
            "command": f"python benchmarks/run.py {m['from']}",
            "body": f"No committed result of this case yet: run the command above on an otherwise idle machine "
            f"and copy its result (`results/benchmarks/{m['from']}.json`) to `docs/performance/` with its "
            "date, machine, command and lock, as the other snapshots there.",
        }
    snap = json.loads(path.read_text())
    return {
        **m,
        **{k: snap[k] for k in ("date", "machine", "command", "lock")},
        "body": m["body"].format(**snap["result"]),
    }


def performance() -> str:
    out = ["## Measurements", ""]
    for m in yaml.safe_load((PERFORMANCE / "measurements.yaml").read_text()):
        if "from" in m:
            m = measured(m)
        out += [
            f"### {m['title']}",
            "",
            provenance(m["date"], m["machine"], m["command"], m["lock"]),
            "",
            m["body"].strip(),
            "",
        ]
    fresh = sorted((ROOT / "results" / "benchmarks").glob("*.json"))
    if fresh:
        out += ["## Benchmark results of this checkout (`results/benchmarks/`)", ""]
        for path in fresh:
            result = json.loads(path.read_text())
            date = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
            versions = result.get("versions", {})
            out.append(
                benchmark(
                    result,
                    date.strftime("%Y-%m-%d %H:%M UTC"),
                    machine_of(result),
                    f"python benchmarks/run.py {result['case']}",
                    f"JAX {versions.get('jax', '?')}, Python {versions.get('python', '?')}",
                )
            )
    out += ["## Benchmark results, committed snapshot (`docs/performance/`)", ""]
    for path in sorted(PERFORMANCE.glob("*.json")):
        snap = json.loads(path.read_text())
        out.append(benchmark(snap["result"], snap["date"], snap["machine"], snap["command"], snap["lock"]))
    return "\n".join(out)


GENERATORS = {"configuration": configuration, "captions": captions, "outputs": outputs, "performance": performance}
