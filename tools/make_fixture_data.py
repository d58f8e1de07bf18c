"""Write the datasets the project ships, all written by the project (no third-party rows).

fixtures/datasets/demo/support_chat.jsonl, the README demo: a small customer-support and coding-help chat set in
OpenAI `messages` form. Most rows are clean; a few carry the mistakes mldebug is meant to catch, as they happen in
real exports:
  - tool calls and tool results (the Llama 3.0 template drops tool_calls and ignores tools);
  - a chat-template token typed into content (`<|eot_id|>` pasted from a log);
  - one very long answer that a 512-token limit cuts;
  - an assistant turn left empty by a broken export.
fixtures/preflight/{axolotl,trl}/train*.jsonl and fixtures/preflight/llama-factory/data/: the preflight
end-to-end datasets, with their planted defects at fixed rows (the tests name them).
Run from the repository root: python tools/make_fixture_data.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path("fixtures/datasets/demo/support_chat.jsonl")
PREFLIGHT = Path("fixtures/preflight")
SYSTEM = "You are Pico, the support assistant of a small bike-repair shop. Be brief and concrete."

QA = [
    ("My rear brake squeals every time I stop. What should I check first?",
     "Start with the pads: look for glazing or oil. Clean the rim or rotor with isopropyl alcohol, then lightly "
     "sand glazed pads. If it still squeals, check that the caliper bolts are tight."),
    ("How often should I oil my chain?",
     "About every 150-300 km, or after any ride in the rain. Wipe the chain, put one drop on each roller, wait a "
     "minute, then wipe off the excess."),
    ("What tyre pressure should I use on a city bike with 40 mm tyres?",
     "Around 3.5 to 4.5 bar (50-65 psi). Go lower for comfort on rough streets, higher if you carry heavy loads."),
    ("Can you true a wheel while I wait?",
     "Usually yes: a simple true takes 15-20 minutes. If a spoke is broken we need about an hour."),
    ("Do you sell tubeless sealant?",
     "Yes, we stock 125 ml and 500 ml bottles. 60 ml per tyre is enough for most road and gravel tyres."),
    ("My gears skip under load. Is the chain worn?",
     "Possibly. Measure it with a chain checker: at 0.5% stretch on 11/12-speed (0.75% on 8-10 speed) replace it. "
     "A worn chain often means the cassette needs replacing too."),
    ("What are your opening hours on Saturday?",
     "Saturdays we are open from 9:00 to 14:00."),
    ("Is it worth converting my old steel frame to a single speed?",
     "If the frame has horizontal dropouts, yes: it is cheap and low maintenance. With vertical dropouts you will "
     "need a chain tensioner."),
    ("How do I know if my brake pads need replacing?",
     "Rim pads: when the grooves are gone. Disc pads: when the pad material is thinner than about 0.5 mm, or the "
     "backing plate and pad together are under 3 mm."),
    ("Can I use WD-40 on my chain?",
     "Only to clean it. WD-40 is a solvent, not a lubricant: after cleaning, apply a proper chain lube."),
    ("What does a basic service include?",
     "Gear and brake adjustment, chain clean and lube, tyre pressure, bolt check and a short test ride. It costs "
     "45 euros and takes one working day."),
    ("My headset creaks when I brake hard. What is that?",
     "Often a loose headset or stem. Hold the front brake and rock the bike: if you feel a knock, the headset needs "
     "adjusting. Creaks can also come from a dry stem-steerer interface."),
]

MORE_QA = [
    ("Should I wax or oil my chain for commuting?",
     "Oil is simpler for daily commuting in wet weather. Wax stays cleaner but needs re-waxing every 300-400 km."),
    ("What size inner tube fits a 700x35c tyre?",
     "A 700x32-47c tube (often sold as 28 x 1.25-1.75) fits. Check the valve type: Presta or Schrader."),
    ("My pedals click on every stroke.",
     "Tighten the pedals into the cranks (the left pedal has a reverse thread), then check the cleats and the "
     "bottom bracket."),
    ("How long does a hydraulic brake bleed take?",
     "About 30 minutes per brake, including a test ride. Mineral oil and DOT systems are both fine."),
    ("Can I fit wider tyres on my road bike?",
     "Measure the gap between tyre and frame at the chainstays and fork crown: leave at least 4 mm on each side."),
    ("Do you repair cargo bikes?",
     "Yes, including long-tails and box bikes. Call ahead for box bikes so we can keep space free in the workshop."),
    ("Why does my derailleur hit the spokes?",
     "The derailleur hanger is probably bent. We can straighten it with an alignment gauge in about ten minutes."),
    ("What is the difference between a basic and a full service?",
     "A full service adds hub, headset and bottom-bracket checks, a drivetrain deep clean and new cables if needed."),
    ("Is it bad to leave my bike outside in winter?",
     "Road salt and moisture corrode the chain and cables quickly. Cover it, and rinse and oil the chain weekly."),
    ("How tight should my stem bolts be?",
     "Use the torque printed on the stem, usually 5-6 Nm. Tighten the bolts in turns, a little at a time."),
]

CODE_QA = [
    ("Write a Python function that converts psi to bar.",
     "```python\ndef psi_to_bar(psi: float) -> float:\n    return psi * 0.0689476\n```"),
    ("How do I read a CSV of service bookings with pandas and count bookings per day?",
     "```python\nimport pandas as pd\n\nbookings = pd.read_csv(\"bookings.csv\", parse_dates=[\"date\"])\n"
     "per_day = bookings.groupby(bookings[\"date\"].dt.date).size()\nprint(per_day)\n```"),
]

MULTI_TURN = [
    [("I want a new chain for my 11-speed road bike.",
      "Sure. Do you know the brand of your drivetrain? Shimano and SRAM 11-speed chains are not always swapped."),
     ("It's Shimano 105.", "Then a Shimano CN-HG601 or a KMC X11 fits. We have both; fitting takes 10 minutes."),
     ("Great, I'll come by tomorrow.", "See you tomorrow. Bring the bike clean if you can, it speeds things up.")],
    [("My e-bike battery drains fast in winter.",
      "Lithium batteries lose capacity in the cold. Store and charge the battery indoors and fit it just before "
      "you ride."),
     ("Does that damage the battery?",
      "Riding in the cold does not, but charging below about 0 °C does. Let it warm up to room temperature first.")],
]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "check_stock",
        "description": "Look up how many units of a part the shop has in stock.",
        "parameters": {
            "type": "object",
            "properties": {"part": {"type": "string", "description": "part name or SKU"}},
            "required": ["part"],
        },
    },
}
BOOK_TOOL = {
    "type": "function",
    "function": {
        "name": "book_service",
        "description": "Book a service slot.",
        "parameters": {
            "type": "object",
            "properties": {"day": {"type": "string"}, "kind": {"type": "string", "enum": ["basic", "full"]}},
            "required": ["day", "kind"],
        },
    },
}


def chat(pairs: list[tuple[str, str]], system: bool = True) -> dict:
    messages = [{"role": "system", "content": SYSTEM}] if system else []
    for user, assistant in pairs:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return {"messages": messages}


def tool_row(question: str, name: str, arguments: dict, result: dict, answer: str, tools: list[dict]) -> dict:
    return {
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": name, "arguments": arguments}}]},
            {"role": "tool", "content": json.dumps(result)},
            {"role": "assistant", "content": answer},
        ],
        "tools": tools,
    }


def long_answer() -> str:
    steps = [
        "Shift to the smallest cog and take the wheel out",
        "Remove the cassette with a chain whip and a lockring tool",
        "Clean the freehub body and check it for notches",
        "Grease the freehub splines lightly",
        "Slide the new cassette on, matching the wide spline",
        "Tighten the lockring to 40 Nm",
        "Refit the wheel and check the limit screws",
        "Adjust cable tension until shifts are quick in both directions",
        "Check the B-tension screw against the largest cog",
        "Test ride and fine-tune the barrel adjuster",
    ]
    detail = (" Take your time here: a rushed step is the usual reason for noisy shifting afterwards, and it is"
              " much easier to get it right now than to chase the problem on the road.")
    return "\n".join(f"{i}. {step}.{detail}" for i, step in enumerate(steps * 3, 1))


def rows() -> list[dict]:
    out = [chat([pair]) for pair in QA[:6]]
    out.append(tool_row("Do you have a 105 rear derailleur in stock?", "check_stock", {"part": "RD-R7000"},
                        {"part": "RD-R7000", "in_stock": 2}, "Yes, we have two Shimano 105 RD-R7000 in stock.",
                        [WEATHER_TOOL]))
    out += [chat([pair], system=False) for pair in QA[6:9]]
    out.append(chat(MULTI_TURN[0]))
    out.append(chat([("Summarise what you told me in the last chat.",
                      "Sure. Last time we said: replace the chain at 0.5% stretch.<|eot_id|>Anything else?")]))
    out += [chat([pair]) for pair in CODE_QA]
    out.append(tool_row("Book me a full service on Friday.", "book_service", {"day": "Friday", "kind": "full"},
                        {"booked": True, "slot": "Friday 10:00"}, "Done: your full service is booked for Friday at "
                        "10:00.", [WEATHER_TOOL, BOOK_TOOL]))
    out.append(chat([("Walk me through replacing a cassette and adjusting the gears afterwards.", long_answer())]))
    out += [chat([pair]) for pair in QA[9:]]
    out.append(chat(MULTI_TURN[1]))
    broken = chat([("Can you check my order status?", "")])
    out.append(broken)
    return out


def clean_pairs() -> list[tuple[str, str]]:
    return QA + MORE_QA + CODE_QA


def pasted_log() -> str:
    """A user turn that pastes a long workshop log: far over a 1,024-token sequence length."""
    line = "2024-05-{day:02d} 09:{minute:02d} bay {bay}: customer bike in for {job}; parts {parts}; notes: {notes}"
    jobs = ["basic service", "full service", "brake bleed", "wheel true", "chain and cassette", "headset adjust"]
    entries = [line.format(day=1 + i % 28, minute=i % 60, bay=1 + i % 3, job=jobs[i % len(jobs)],
                           parts="chain, cable set" if i % 2 else "none", notes="test ride ok, customer informed")
               for i in range(90)]
    return "Summarise this workshop log for me:\n" + "\n".join(entries)


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    print(f"wrote {path} ({len(records)} rows)")


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def preflight_rows() -> None:
    clean = [chat([pair], system=False) for pair in clean_pairs()[:24]]
    write_jsonl(PREFLIGHT / "axolotl" / "train_fixed.jsonl", clean)
    planted = [dict(row) for row in clean]
    planted[16] = {"messages": [{"role": "user", "content": planted[16]["messages"][0]["content"]},
                                {"role": "assistant", "content": None}]}  # row 17 below: content null (DS010)
    planted.insert(11, chat([(pasted_log(), "Ninety jobs, mostly services; all test rides passed.")], system=False))
    write_jsonl(PREFLIGHT / "axolotl" / "train.jsonl", planted)
    write_jsonl(PREFLIGHT / "trl" / "train_fixed.jsonl", clean)
    trl = [dict(row) for row in clean]
    trl[7] = {"messages": [trl[7]["messages"][0], {"role": "gpt", "content": trl[7]["messages"][1]["content"]}]}
    write_jsonl(PREFLIGHT / "trl" / "train.jsonl", trl)


def llama_factory_data() -> None:
    """An alpaca-style identity set and a ShareGPT tool-calling set, registered in dataset_info.json."""
    data = PREFLIGHT / "llama-factory" / "data"
    identity = [{"instruction": q, "input": "", "output": a.replace("we", "{{name}} and the team", 1)}
                for q, a in clean_pairs()[:20]]
    write_json(data / "shop_identity.json", identity)
    tools = json.dumps([WEATHER_TOOL["function"], BOOK_TOOL["function"]])
    calls = []
    for i, (question, part) in enumerate([("Is a Shimano 105 rear derailleur in stock?", "RD-R7000"),
                                          ("Do you have 700x35c tubes?", "tube 700x35"),
                                          ("Any KMC X11 chains left?", "KMC X11")] * 10):
        calls.append({"conversations": [
            {"from": "human", "value": question},
            {"from": "function_call", "value": json.dumps({"name": "check_stock", "arguments": {"part": part}})},
            {"from": "observation", "value": json.dumps({"part": part, "in_stock": i % 4})},
            {"from": "gpt", "value": f"We have {i % 4} of {part} in stock." if i % 4 else f"{part} is sold out."},
        ], "tools": tools})
    calls[23] = {"conversations": [{"from": "human", "value": pasted_log() * 2},
                                   {"from": "gpt", "value": long_answer()}], "tools": tools}  # over cutoff_len
    write_json(data / "shop_tools.json", calls)
    write_json(data / "dataset_info.json", {
        "shop_identity": {"file_name": "shop_identity.json"},
        "shop_tools": {"file_name": "shop_tools.json", "formatting": "sharegpt",
                       "columns": {"messages": "conversations", "tools": "tools"}},
    })


def main() -> None:
    write_jsonl(OUT, rows())
    preflight_rows()
    llama_factory_data()



if __name__ == "__main__":
    main()
