"""``simlab tools DOMAIN``: a domain's tools, their argument schemas and its seed data."""

from __future__ import annotations

import argparse
import json

from simlab.errors import SpecError, UsageError
from simlab.inert import one_line


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("domain", help="a built-in domain (retail) or an importable module exposing DOMAIN")
    parser.add_argument("--state", action="store_true", help="also print the seed data")
    parser.add_argument("--policy", action="store_true", help="also print the policy text")


def run(args: argparse.Namespace) -> int:
    """A domain's tools (READ or WRITE, description, arguments with types) and its seed data."""
    from simlab.env.domain import load_domain

    try:
        domain = load_domain(args.domain)
    except (SpecError, ValueError, ImportError) as exc:
        raise UsageError(f"domain {args.domain!r}: {exc}") from None
    print(f"domain {domain.name}: {len(domain.tools)} tools")
    for tool in domain.tools:
        schema = tool.json_schema()["function"]
        params = schema.get("parameters", {})
        required = set(params.get("required", []))
        print(f"\n  {tool.name}  [{tool.access.value.upper()}]  {one_line(schema.get('description', ''))}")
        for name, spec in (params.get("properties") or {}).items():
            kind = spec.get("type") or "/".join(s.get("type", "?") for s in spec.get("anyOf", [])) or "any"
            need = "" if name in required else " (optional)"
            print(f"      {name}: {kind}{need}  {one_line(spec.get('description', ''))}")
    if args.policy and domain.policy:
        print(f"\npolicy:\n{domain.policy}")
    if args.state:
        print("\nseed data (a scenario's initial_state is merged over it):")
        print(json.dumps(domain.build_state({}).model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print("\n(--state shows the seed data, --policy the policy text)")
    return 0
