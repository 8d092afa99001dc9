"""The web view as a server serves it (no browser: the browser tests drive
the pages): pages and static files with their content types and caching,
nothing fetched from another host, the thread page's 404, the token
cookie that lets ``EventSource`` in, and, under ``node`` when the machine
has it, the markdown renderer and the event fold the pages run."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

import pytest

from kun.server.web import STATIC
from tests.server.support import api
from tests.server.test_stream import Served, follow, served, text_turn

__all__ = ["served"]

STATIC_DIR = Path(str(files("kun.web") / "static"))
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(STATIC_DIR.iterdir())
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")
TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}


@pytest.mark.anyio
async def test_pages_and_static_files_are_served_with_their_types(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        page = await a.client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert '<ul id="threads"' in page.text
        for path in SHIPPED:
            got = await a.client.get(f"/static/{path.name}")
            assert got.status_code == 200, path.name
            assert got.headers["content-type"].startswith(TYPES[path.suffix]), path.name
            assert got.content == path.read_bytes()
            assert got.headers["cache-control"] == "no-cache"
            again = await a.client.get(
                f"/static/{path.name}", headers={"If-None-Match": got.headers["etag"]}
            )
            assert again.status_code == 304 and not again.content
        missing = await a.client.get("/static/nothere.js")
        assert missing.status_code == 404
        assert (await a.client.get("/static/..%2Fweb.py")).status_code == 404


def test_every_shipped_file_works_offline() -> None:
    shipped = SHIPPED
    assert {p.name for p in shipped} == set(STATIC)
    assert {"index.html", "thread.html", "app.css", "markdown.js", "thread.js"} <= set(STATIC)
    for path in shipped:
        text = path.read_text()
        assert re.search(r"\b(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I) is None, path.name
        assert "@import" not in text, path.name
    for page in (p for p in shipped if p.suffix == ".html"):
        for ref in re.findall(r'(?:src|href)="([^"]+)"', page.read_text()):
            if ref.startswith("/static/"):
                assert ref.removeprefix("/static/") in STATIC, (page.name, ref)
            else:
                assert ref.startswith(("/", "#", "data:")), (page.name, ref)


@pytest.mark.anyio
async def test_the_thread_page_has_its_address_and_a_bad_id_is_a_clean_404(
    tmp_path: Path,
) -> None:
    async with api(tmp_path) as a:
        thread_id = await a.new_thread()
        page = await a.client.get(f"/threads/{thread_id}")
        assert page.status_code == 200 and 'id="transcript"' in page.text
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        for bad in ("thr_nosuchthread", "a%20b", "a%00b", "%2E%2E", "x" * 300):
            missing = await a.client.get(f"/threads/{bad}")
            assert missing.status_code == 404, bad
            assert missing.headers["content-type"] == "text/html; charset=utf-8"
            assert "No such thread" in missing.text


@pytest.mark.anyio
async def test_a_browser_trades_the_token_for_a_cookie(tmp_path: Path) -> None:
    async with api(tmp_path, token="s3cret") as a:
        bearer = {"Authorization": "Bearer s3cret"}
        created = await a.client.post("/v1/threads", json={}, headers=bearer)
        thread_id = created.json()["thread_id"]
        for page in ("/", "/?token=wrong", f"/threads/{thread_id}"):
            locked = await a.client.get(page)
            assert locked.status_code == 401, page
            assert locked.headers["content-type"] == "text/html; charset=utf-8"
            assert "?token=" in locked.text
        api_401 = await a.client.get("/v1/threads?token=s3cret")
        assert api_401.status_code == 401
        assert api_401.json()["error"]["code"] == "unauthorized"

        swap = await a.client.get(f"/threads/{thread_id}?until=3&token=s3cret")
        assert swap.status_code == 303
        assert swap.headers["location"] == f"/threads/{thread_id}?until=3"
        cookie = swap.headers["set-cookie"]
        assert cookie.startswith("kun_token=s3cret;")  # percent-encoding leaves it as it is
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain http on loopback: a Secure cookie never returns

        jar = {"Cookie": "theme=dark; kun_token=s3cret"}
        assert (await a.client.get("/", headers=jar)).status_code == 200
        assert (await a.client.get(f"/threads/{thread_id}", headers=jar)).status_code == 200
        assert (await a.client.get("/v1/threads", headers=jar)).status_code == 200
        stale = {"Cookie": "kun_token=s3cres"}
        assert (await a.client.get("/v1/threads", headers=stale)).status_code == 401


def _node(script: str, *args: str) -> str:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", script, *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


MARKDOWN = """
const md = require(process.argv[1]);
const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify(cases.map((c) => md.render(c))));
"""


@needs_node
def test_markdown_escapes_everything_it_does_not_write_itself() -> None:
    cases = [
        "<script>alert(1)</script> <img src=x onerror=alert(1)>",
        '[x](javascript:alert(1)) [y](https://ok.example/a?b=1&c="2")',
        "# Title\n\n- **bold** and *it* and `<b>code</b>`\n- two\n\n1. one",
        "```html\n<b>raw</b> **not bold**\n```",
    ]
    got = json.loads(_node(MARKDOWN, str(STATIC_DIR / "markdown.js"), json.dumps(cases)))
    assert "<script>" not in got[0] and "<img" not in got[0]
    assert "&lt;script&gt;" in got[0]
    assert got[1].count("<a ") == 1 and "<p>[x](javascript:alert(1)) <a " in got[1]
    assert '<a href="https://ok.example/a?b=1&amp;c=&quot;2&quot;"' in got[1]
    assert got[2].startswith("<h1>Title</h1>")
    assert "<li><strong>bold</strong> and <em>it</em> and <code>&lt;b&gt;" in got[2]
    assert "<ol><li>one</li></ol>" in got[2]
    code = "<code>&lt;b&gt;raw&lt;/b&gt; **not bold**</code>"
    assert got[3] == f'<pre class="code" data-lang="html">{code}</pre>'


FOLD = """
const fold = require(process.argv[1]);
const messages = JSON.parse(require("fs").readFileSync(0, "utf8"));
const thread = new fold.Thread();
const texts = [];
let repeats = 0;
for (const m of messages) {
  if (!thread.apply(JSON.parse(m))) repeats += 1;
  const item = [...thread.items.values()].find((i) => i.type === "assistant_text");
  if (item) texts.push(item.text + item.preview);
}
const item = [...thread.items.values()].find((i) => i.type === "assistant_text");
console.log(JSON.stringify({text: item.text, preview: item.preview, texts, repeats,
  last: thread.lastSeq, status: [...thread.turns.values()][0].status}));
"""


@needs_node
def test_the_page_fold_shows_live_text_once_across_a_reconnect(
    served: Callable[..., Served],
) -> None:
    words = [f"w{i} é😀 " for i in range(30)]
    s = served([text_turn(*words)], delay=0.01)
    s.start_turn("go")
    got = follow(
        s.events_url() + "?live=1", stop=lambda m: m.fields.get("event") == "turn_completed"
    )
    data = [m.fields["data"] for m in got if "data" in m.fields]
    assert any(m.fields.get("event") == "preview" for m in got)
    # A reconnect that repeats the tail: every durable event again from seq 3.
    again = follow(s.events_url() + "?after=2&until=" + str(s.last_seq()))
    replayed = [m.fields["data"] for m in again if "data" in m.fields]
    out = json.loads(_fold(data + replayed))
    assert out["text"] == "".join(words) and out["preview"] == ""
    assert out["repeats"] == len(replayed)
    assert out["last"] == s.last_seq() and out["status"] == "completed"
    shown = out["texts"]
    assert all(b.startswith(a) for a, b in itertools.pairwise(shown)), "text went back"


def _fold(messages: list[str]) -> str:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", FOLD, str(STATIC_DIR / "fold.js")],
        input=json.dumps(messages),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_node
def test_the_page_fold_counts_previewed_characters_as_code_points() -> None:
    def delta(seq: int, text: str) -> str:
        event = {"kind": "assistant_text_delta", "seq": seq, "at": 1, "thread_id": "t"}
        return json.dumps({**event, "turn_id": "u", "item_id": "x", "text": text})

    start = {"kind": "turn_started", "seq": 1, "at": 1, "thread_id": "t", "turn_id": "u"}
    messages = [json.dumps(start), delta(0, "a😀"), delta(0, "b"), delta(2, "a😀"), delta(3, "b")]
    out = json.loads(_fold(messages))
    assert out["texts"] == ["a😀", "a😀b", "a😀b", "a😀b"]
    assert out["text"] == "a😀b" and out["preview"] == "" and out["repeats"] == 0


@pytest.mark.anyio
async def test_any_token_survives_the_cookie(tmp_path: Path) -> None:
    token = 'a b;c="d"%é'
    async with api(tmp_path, token=token) as a:
        swap = await a.client.get("/", params={"token": token})
        assert swap.status_code == 303 and swap.headers["location"] == "/"
        value = swap.headers["set-cookie"].split(";")[0].removeprefix("kun_token=")
        assert re.fullmatch(r"[A-Za-z0-9%._~-]+", value), value
        jar = {"Cookie": f"kun_token={value}"}
        assert (await a.client.get("/v1/threads", headers=jar)).status_code == 200


def test_the_wheel_ships_every_static_file() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["kun.web"]
    for path in SHIPPED:
        assert any(path.match(g) for g in globs), path.name


SETTLE = """
const fold = require(process.argv[1]);
const thread = new fold.Thread();
for (const line of require("fs").readFileSync(0, "utf8").split("\\n").filter(Boolean)) {
  thread.apply(JSON.parse(line));
}
const items = [...thread.items.values()].map((i) => [i.id, i.status, i.text + i.preview]);
console.log(JSON.stringify({items, turn: [...thread.turns.values()][0].items}));
"""


@needs_node
def test_text_only_previewed_goes_when_its_turn_ends() -> None:
    def event(seq: int, kind: str, **fields: object) -> str:
        return json.dumps({"kind": kind, "seq": seq, "at": 1, "turn_id": "u", **fields})

    lines = [
        event(1, "turn_started"),
        event(2, "assistant_text_delta", item_id="kept", text="said "),
        event(0, "assistant_text_delta", item_id="kept", text="and more"),
        event(0, "assistant_text_delta", item_id="lost", text="never written down"),
        event(3, "turn_failed", code="orphaned", message="kun stopped"),
    ]
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", SETTLE, str(STATIC_DIR / "fold.js")],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out == {"items": [["kept", "failed", "said "]], "turn": ["kept"]}


QUEUED = """
const fold = require(process.argv[1]);
const thread = new fold.Thread();
const seen = [];
for (const line of require("fs").readFileSync(0, "utf8").split("\\n").filter(Boolean)) {
  thread.apply(JSON.parse(line));
  seen.push([...thread.turns.values()].map((t) => t.status).join(","));
}
const turns = [...thread.turns.values()].map((t) => [t.id, t.status, t.items.length]);
const messages = [...thread.items.values()].filter((i) => i.type === "user_message");
console.log(JSON.stringify({turns, seen, messages: messages.map((m) => m.data.text)}));
"""


@needs_node
def test_the_page_fold_shows_queued_turns_waiting_then_running() -> None:
    """The golden ``queued_turns`` log, folded as the page folds it: each
    queued turn shows ``queued`` with its message, the one started runs and
    completes under its own id, the cancelled one ends ``aborted``."""
    log = ROOT / "events" / "golden" / "queued_turns.events.jsonl"
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", QUEUED, str(STATIC_DIR / "fold.js")],
        input=log.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    out = json.loads(done.stdout)
    assert "running,queued,queued" in out["seen"]
    assert "completed,running,aborted" in out["seen"]
    assert [status for _, status, _ in out["turns"]] == ["completed", "completed", "aborted"]
    assert out["messages"][1:] == [
        "Then document it in the README.",
        "And add this screenshot to the docs.",
    ]
