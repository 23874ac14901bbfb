"""The web explorer at /explore, driven in headless Chromium against `apexmem serve` as a real
process, and `apexmem timeline --svg` as a real subprocess.

Debian's chromium (`/usr/bin/chromium`) is required: `.ci/run` installs it, and these tests
fail, never skip, without it. One browser serves the module; each test has its own page.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from serving import AUTH, CLI, TOKEN, free_port, make_memory, running

CHROMIUM: Final = Path("/usr/bin/chromium")
SVG: Final = "{http://www.w3.org/2000/svg}"
FIRST: Final = {
    "facts": [
        {"subject": "Alice", "subject_type": "person", "relation": "works_at", "object": "Acme",
         "object_type": "organization", "valid_from": "2020-01-01T00:00:00Z", "actor": "hr-bot",
         "episode": "onboarding", "ref": "m1"},
        {"subject": "Bob", "subject_type": "person", "relation": "manages", "object": "Alice",
         "object_type": "person", "edge_type": "entity"},
        {"subject": "Alice", "subject_type": "person", "relation": "uses", "object": "Rust",
         "object_type": "language"},
    ]
}  # fmt: skip
LATER: Final = {
    "facts": [
        {"subject": "Alice", "subject_type": "person", "relation": "works_at", "object": "Globex",
         "object_type": "organization", "valid_from": "2023-01-01T00:00:00Z", "actor": "hr-bot"},
    ]
}  # fmt: skip
WELCOME: Final = {
    "episode": "onboarding", "speaker": "hr-bot", "ref": "m1",
    "text": "Please welcome our new colleague to the Acme team.",
}  # fmt: skip
FADED: Final = {
    "facts": [
        {"subject": "Carol", "subject_type": "person", "relation": "uses", "object": "Perl",
         "object_type": "language", "observed_at": "2019-01-01T00:00:00Z"},
        {"subject": "Carol", "subject_type": "person", "relation": "likes", "object": "Tea",
         "object_type": "concept"},
    ]
}  # fmt: skip
"""Carol's Perl was last observed in 2019: its confidence has decayed under 0.1 (faded)."""
LATE_CORRECTION: Final = {
    "facts": [
        {"subject": "Alice", "subject_type": "person", "relation": "lives_in", "object": "Paris",
         "object_type": "location", "valid_from": "2018-01-01T00:00:00Z",
         "valid_until": "2021-06-30T00:00:00Z"},
        {"subject": "Alice", "subject_type": "person", "relation": "lives_in", "object": "Lyon",
         "object_type": "location", "valid_from": "2021-06-30T00:00:00Z"},
    ]
}  # fmt: skip


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory: Path = make_memory(tmp_path_factory.mktemp("explorer"))
    return directory


@pytest.fixture(scope="module")
def server(memory_dir: Path) -> Iterator[str]:
    """`apexmem serve` in its own process over a memory where Alice changed employer."""
    base = f"http://127.0.0.1:{free_port()}"
    log = memory_dir.parent / "serve.log"
    port = base.rsplit(":", 1)[1]
    with running("serve", "--db", str(memory_dir), "--port", port, ready=f"{base}/v1/stats",
                 log=log):  # fmt: skip
        told = []
        for body in (FIRST, LATER, LATE_CORRECTION, FADED):
            answer = httpx.post(f"{base}/v1/facts", json=body, headers=AUTH)
            assert answer.status_code == 200, answer.text
            told.append(answer.json()["results"])
        answer = httpx.post(f"{base}/v1/messages", json=WELCOME, headers=AUTH)
        assert answer.status_code == 200, answer.text
        acme, rust = told[0][0]["fact_id"], told[0][2]["fact_id"]
        link = {"source": rust, "target": acme, "link_type": "caused_by", "strength": 0.8}
        answer = httpx.post(f"{base}/v1/links", json=link, headers=AUTH)
        assert answer.status_code == 200, answer.text
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    opened = context.new_page()
    yield opened
    context.close()


def _open(page: Page, server: str, fragment: str = "") -> None:
    """The explorer, with the token typed into its prompt."""
    page.goto(f"{server}/explore{fragment}")
    page.fill("#token", TOKEN)
    page.click("#login-form button[type=submit]")
    expect(page.locator("#explorer")).to_be_visible()


def test_the_page_asks_for_the_token_and_never_puts_it_in_a_url(page: Page, server: str) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    page.goto(f"{server}/explore")
    prompt_first = page.locator("#login").is_visible()
    _open(page, server)
    expect(page.locator("#results")).to_contain_text("Alice")

    assert prompt_first
    assert any("/v1/entities" in url for url in requested)
    assert not [url for url in requested if TOKEN in url]
    assert [url for url in requested if not url.startswith(server)] == []  # nothing from afar
    assert TOKEN not in page.url


def test_a_wrong_token_brings_the_prompt_back(page: Page, server: str) -> None:
    page.goto(f"{server}/explore")
    page.fill("#token", "not-the-token-0123")
    page.click("#login-form button[type=submit]")

    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#status")).to_contain_text("refused")


def test_an_entity_shows_its_facts_and_graph_and_a_click_moves_to_a_neighbour(
    page: Page, server: str, tmp_path: Path
) -> None:
    _open(page, server, "#entity=Alice&type=person&hops=2")
    expect(page.locator("#facts tbody")).to_contain_text("Globex")
    page.wait_for_function("window.apexmem.graph && window.apexmem.graph.nodes().length > 1")
    labels = page.evaluate("window.apexmem.graph.nodes().map(n => n.data('label')).sort()")
    colours = page.evaluate(
        "Object.fromEntries(window.apexmem.graph.edges().map("
        "e => [e.data('edge_type'), e.style('line-color')]))"
    )
    page.screenshot(path=str(tmp_path / "entity.png"), full_page=True)

    page.evaluate(  # returns nothing: a collection would be serialized, core and all
        "() => { window.apexmem.graph.edges('[label = \"uses\"]').emit('tap'); }"
    )
    expect(page.locator("#history-title")).to_contain_text("Alice uses")
    page.evaluate(
        "() => { window.apexmem.graph.nodes().filter(n => n.data('label') === 'Bob').emit('tap'); }"
    )
    expect(page.locator("#entity-name")).to_have_text("Bob (person)")

    assert labels == ["Alice", "Bob", "Globex", "Lyon", "Rust"]
    assert colours["semantic"] != colours["entity"]
    assert (tmp_path / "entity.png").read_bytes().startswith(b"\x89PNG")
    assert "entity=Bob" in page.url
    print(f"screenshot: {tmp_path / 'entity.png'}")


def test_the_time_slider_before_the_supersession_shows_the_old_employer(
    page: Page, server: str, tmp_path: Path
) -> None:
    history = httpx.get(f"{server}/v1/history", params={"entity": "Alice"}, headers=AUTH).json()
    superseded = next(e for e in history["events"] if e["tag"].startswith("fact-superseded"))
    _open(page, server, "#entity=Alice&type=person&hops=1")
    expect(page.locator("#facts tbody")).to_contain_text("Globex")
    steps: list[str] = page.evaluate("window.apexmem.state.steps")
    before = max(i for i, s in enumerate(steps) if _t(s) < _t(superseded["recorded_at"]))

    page.locator("#known-slider").fill(str(before))

    expect(page.locator("#facts tbody")).to_contain_text("Acme")
    expect(page.locator("#facts tbody")).not_to_contain_text("Globex")
    expect(page.locator("#known-label")).not_to_have_text("now")
    page.screenshot(path=str(tmp_path / "before.png"), full_page=True)
    page.locator("#known-slider").fill(str(len(steps)))
    expect(page.locator("#facts tbody")).to_contain_text("Globex")


def test_the_valid_time_picker_and_the_timeline_show_every_version_and_its_history(
    page: Page, server: str
) -> None:
    _open(page, server, "#entity=Alice&type=person&hops=1")
    expect(page.locator("#facts tbody")).to_contain_text("Globex")

    page.locator("#valid-at").fill("2021-06-01T00:00:00")
    expect(page.locator("#facts tbody")).to_contain_text("Acme")
    row = page.locator("#facts tbody tr", has_text="works_at")
    row.get_by_role("button", name="timeline").click()
    bars = page.locator("#timeline-svg g.version")
    expect(bars).to_have_count(2)
    bars.first.click()

    expect(page.locator("#history-title")).to_contain_text("works_at")
    events = page.locator("#history-table tbody tr")
    expect(events.first).to_contain_text("hr-bot")
    assert events.count() >= 2
    assert page.locator("#history-table td.hash").first.inner_text().endswith("...")


def test_clicking_a_fact_shows_its_episode_the_message_it_was_learned_from_and_its_links(
    page: Page, server: str, tmp_path: Path
) -> None:
    _open(page, server, "#entity=Alice&type=person&hops=1&valid=2021-06-01T00:00:00Z")
    row = page.locator("#facts tbody tr", has_text="Acme")
    expect(row).to_contain_text("onboarding")

    row.locator("button.episode").click()

    expect(page.locator("#evidence")).to_be_visible()
    expect(page.locator("#evidence-fact")).to_contain_text("hr-bot")
    expect(page.locator("#episode-title")).to_contain_text("Episode onboarding (1 messages)")
    evidence = page.locator("#episode-table tr.evidence")
    expect(evidence).to_contain_text("Please welcome our new colleague")
    expect(evidence.locator("td.hash")).to_contain_text("...")
    expect(page.locator("#history-title")).to_contain_text("Alice works_at")
    linked = page.locator("#linked-facts li.linked")
    expect(linked).to_contain_text("<- caused_by (0.80, told")
    expect(linked).to_contain_text("Alice uses Rust")
    page.screenshot(path=str(tmp_path / "episode.png"), full_page=True)
    position = page.locator("#evidence-fact dd").nth(1).inner_text()

    assert position.isdigit()
    print(f"screenshot: {tmp_path / 'episode.png'}")


def test_the_faded_toggle_shows_the_facts_whose_confidence_decayed(page: Page, server: str) -> None:
    _open(page, server, "#entity=Carol&type=person&hops=1")
    expect(page.locator("#facts tbody")).to_contain_text("Tea")
    expect(page.locator("#facts tbody")).not_to_contain_text("Perl")

    page.locator("#faded").check()

    faded = page.locator("#facts tbody tr.faded")
    expect(faded).to_contain_text("Perl")
    expect(faded).to_contain_text("(faded)")
    expect(page.locator("#facts tbody tr.fact:not(.faded)")).to_contain_text("Tea")
    page.wait_for_function("window.apexmem.graph.nodes().some(n => n.data('label') === 'Perl')")
    assert "faded=1" in page.url


def test_facts_and_traverse_take_include_faded(server: str) -> None:
    asked = {"entity": "Carol"}

    default = httpx.get(f"{server}/v1/facts", params=asked, headers=AUTH).json()
    with_faded = httpx.get(
        f"{server}/v1/facts", params={**asked, "include_faded": "true"}, headers=AUTH
    ).json()
    walked = httpx.get(
        f"{server}/v1/traverse", params={"start": "Carol", "include_faded": "true"}, headers=AUTH
    ).json()

    assert [f["object"] for f in default["facts"]] == ["Tea"]
    assert sorted(f["object"] for f in with_faded["facts"]) == ["Perl", "Tea"]
    assert all(isinstance(f["position"], int) for f in with_faded["facts"])
    assert sorted(e["name"] for e in walked["entities"]) == ["Carol", "Perl", "Tea"]


def test_the_episode_lookup_lists_a_conversation_with_positions_and_chains(server: str) -> None:
    found = httpx.get(
        f"{server}/v1/episode", params={"conversation": "onboarding"}, headers=AUTH
    ).json()

    messages = [e for e in found["events"] if e["tag"].startswith("message-recorded")]
    assert [m["data"]["text"] for m in messages] == [WELCOME["text"]]
    assert all(len(e["chain"]) == 64 and e["position"] > 0 for e in found["events"])


def test_the_recall_box_shows_hits_with_why_and_provenance(page: Page, server: str) -> None:
    _open(page, server)

    page.fill("#recall-query", "where does Alice work")
    page.click("#recall-form button[type=submit]")

    first = page.locator("#recall-hits li.hit").first
    expect(first).to_contain_text("Alice works_at Globex")
    expect(first.locator(".why")).to_contain_text("full text")
    expect(first.locator(".provenance")).to_contain_text("positions")


def test_the_explorer_files_are_public_and_the_data_is_not(server: str) -> None:
    page = httpx.get(f"{server}/explore")
    script = httpx.get(f"{server}/explore/cytoscape.min.js")
    data = httpx.get(f"{server}/v1/entities", params={"query": "Alice"})
    posted = httpx.post(f"{server}/explore")

    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert data.status_code == 401
    assert posted.status_code == 405


def test_the_explorer_serves_its_own_files_only(server: str) -> None:
    asked = ["/explore/%2e%2e/app.py", "/explore/..%2Fapp.py", "/explore/__init__.py",
             "/explore/static/explore.js", "/explore/nothing.js"]  # fmt: skip

    statuses = {path: httpx.get(server + path).status_code for path in asked}

    assert set(statuses.values()) == {404}, statuses


def test_a_bad_limit_is_refused_naming_the_field(server: str) -> None:
    answer = httpx.get(f"{server}/v1/entities", params={"limit": "0"}, headers=AUTH)

    assert answer.status_code == 422
    assert answer.json()["field"] == "limit"


def test_the_timeline_command_draws_every_version_as_svg(
    server: str, memory_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "lives-in.svg"

    done = subprocess.run(
        [*CLI, "--db", str(memory_dir), "timeline", "Alice", "--relation", "lives_in",
         "--svg", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "2 versions of Alice lives_in" in done.stdout
    bars = _bars(ET.parse(out).getroot())
    assert [b["object"] for b in bars] == ["Paris", "Lyon"]
    assert bars[0]["x"] < bars[1]["x"]
    assert bars[0]["kind"] == "version closed" and bars[1]["kind"] == "version current"


def _bars(root: ET.Element) -> list[dict[str, Any]]:
    """Each version bar of a timeline SVG: its class, left edge and label, top to bottom."""
    found = []
    for group in root.iter(f"{SVG}g"):
        rect = group.find(f"{SVG}rect")
        label = group.findall(f"{SVG}text")[-1]
        assert rect is not None
        found.append(
            {"kind": group.get("class"), "x": float(rect.get("x", "0")), "object": label.text}
        )
    return found


def _t(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def test_a_lookup_refuses_a_parameter_it_does_not_take(server: str) -> None:
    asked = {"query": "Alice", "limt": "5"}  # a misspelt limit is refused, not ignored
    answer = httpx.get(f"{server}/v1/entities", params=asked, headers=AUTH)
    found = httpx.get(f"{server}/v1/entities", params={"query": "Alice"}, headers=AUTH)

    assert answer.status_code == 422
    assert "limt" in answer.text and "is not a parameter of this operation" in answer.text
    assert found.status_code == 200
