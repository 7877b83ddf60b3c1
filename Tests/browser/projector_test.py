"""The projector page in a real browser: Debian's chromium, headless, driven by selenium through
Debian's chromedriver (/usr/bin/chromedriver, given explicitly, so selenium never downloads one).

Tests/browser/run.sh starts a private bus and a tally daemon on the simulated air with --web, then
runs this script with: BIN_DIR WORK_DIR JOIN_CODE PAGE_URL IMAGE_DIR

1. Twelve clicker-vote processes (each its own device key) vote: A twice, B five times, C three
   times, D once, and one D then B (a change).
2. While the question is open, live counts move only at epochs of ten voters (CountPublisher): the
   page, loaded headless, shows bars whose data-count equal, option by option, the live counts
   `clicker-tally status --json` reports, and /results.json carries the same; waits are
   WebDriverWait on the DOM, never a fixed sleep.
3. Screenshots at 1920x1080 and 390x844 (viewport pixels, checked in the PNG header) go to IMAGE_DIR.
4. Hiding the results through D-Bus (ShowCounts false, what the `h` key does) removes every bar and
   count from the DOM, and /results.json then carries no results.
5. Showing them again brings the same bars back.
6. Closing the question through D-Bus: the bars show the exact counts of `clicker-tally results
   --json`, every ballot cast.
7. `clicker-tally export` writes the question's SVG chart: well-formed XML (xml.etree), the title,
   and bars with the same counts.
Prints "N passed, M failed".
"""
import json
import os
import struct
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BIN, WORK, CODE, URL, IMAGES = sys.argv[1:6]
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
VOTES = [["A"], ["A"], ["B"], ["B"], ["B"], ["B"], ["B"], ["C"], ["C"], ["C"], ["D"], ["D", "B"]]  # the last changes D to B
EXPECTED = {"A": 2, "B": 6, "C": 3, "D": 1}
TITLE = "Which planet is the largest?"  # Tests/browser/run.sh's question file
OPTIONS = ["Mercury", "Venus", "Jupiter", "Mars"]

passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok: {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL: {what} {detail}", flush=True)


def results():
    out = subprocess.run([f"{BIN}/clicker-tally", "results", "--json"], capture_output=True, text=True, timeout=20)
    return json.loads(out.stdout) if out.returncode == 0 else None


def page_json():
    with urllib.request.urlopen(URL.split("?")[0].rstrip("/") + "/results.json", timeout=10) as r:
        return json.load(r)


def status():
    out = subprocess.run([f"{BIN}/clicker-tally", "status", "--json"], capture_output=True, text=True, timeout=20)
    return json.loads(out.stdout) if out.returncode == 0 else None


def live_counts():
    """The counts the tally shows its live consumers now (terminal view, D-Bus Status)."""
    s = status()
    return {a["label"]: a["count"] for a in s["answers"]} if s else None


def call(method, *args):
    subprocess.run(["dbus-send", "--system", "--print-reply", "--dest=org.clicker.Tally1", "/org/clicker/Tally1",
                    f"org.clicker.Tally1.{method}", *args], check=True, capture_output=True, timeout=20)


def show_counts(show):
    call("ShowCounts", f"boolean:{'true' if show else 'false'}")


def until(what, condition, timeout=30, interval=0.1):
    """Polls a condition that announces no event of its own (a count in another process)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(what)


def bars(driver):
    """The bars' options and counts, read in one script: the page redraws them on every event, so
    elements found first and read afterwards may already be gone (a stale reference)."""
    pairs = driver.execute_script(
        "return Array.from(document.querySelectorAll('.bar[data-option]'))"
        ".map(e => [e.getAttribute('data-option'), e.getAttribute('data-count')]);")
    return {option: int(count) for option, count in pairs or [] if count is not None}


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def screenshot(driver, width, height, mobile, name):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
    # The layout at the new size, before the picture: the bars are laid out again.
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return window.innerWidth") == width)
    path = os.path.join(IMAGES, name)
    driver.save_screenshot(path)
    size = png_size(path)
    check(f"{name} is {width}x{height}", size == (width, height), f"got {size}")
    overflow = driver.execute_script("return document.documentElement.scrollWidth") > width
    check(f"{name}: nothing wider than the viewport", not overflow)


def main():
    voters = []
    try:
        # 1. Votes from separate voter processes on the simulated air, started together.
        for i, answers in enumerate(VOTES):
            env = dict(os.environ, XDG_STATE_HOME=os.path.join(WORK, f"voter-{i}"))
            # --question 1: these voters vote on question 1 directly (their "voting"/"changed to" lines), not
            # by following the beacon, which every form without --question does.
            voters.append(subprocess.Popen([f"{BIN}/clicker-vote", "--radio", "sim", "--air", os.path.join(WORK, "air.sock"),
                                            "--question", "1", CODE, answers[0]], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True, bufsize=1))
        cast = 0
        for p, answers in zip(voters, VOTES):
            ok = p.stdout.readline().startswith(f"voting {answers[0]} ")
            for a in answers[1:]:
                p.stdin.write(a + "\n")
                p.stdin.flush()
                ok = ok and p.stdout.readline().startswith(f"changed to {a} ")
            cast += ok
        check(f"{len(VOTES)} voters cast their votes", cast == len(VOTES), f"{cast} acknowledged")
        try:
            counted = until("the tally counts every vote",
                            lambda: (r := results()) and r["counts"] == EXPECTED and r["voters"] == len(VOTES) and r)
        except TimeoutError:
            counted = None
        check("the tally counts the votes cast", counted is not None, f"last: {results()}")
        try:
            live = until("an epoch of live counts", lambda: (c := live_counts()) and sum(c.values()) >= 10 and c)
        except TimeoutError:
            live = None
        check("the tally publishes live counts (an epoch of ten voters or more)", live is not None, f"{status()}")
        live = live or EXPECTED

        # 2. The page shows the tally's counts.
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--hide-scrollbars", "--window-size=1920,1080", "--force-device-scale-factor=1"):
            options.add_argument(a)
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        try:
            driver.get(URL)
            wait = WebDriverWait(driver, 30)
            try:
                wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-connected") == "true")
                check("the page connects to the event stream", True)
            except TimeoutException:
                check("the page connects to the event stream", False)
            try:
                wait.until(lambda d: bars(d) == live_counts())
                check("the bars show the live counts the tally reports (status --json)", True)
            except TimeoutException:
                check("the bars show the live counts the tally reports (status --json)", False,
                      f"page {bars(driver)}, tally {live_counts()}")
            shown = bars(driver)
            snapshot = page_json()
            served = {b["option"]: b["count"] for b in (snapshot.get("results") or {}).get("bars", [])}
            check("/results.json carries the same counts", served == shown, f"{served}")
            check("the join code is shown", driver.find_element(By.ID, "joincode").text.replace(" ", "") == CODE.replace(" ", ""),
                  driver.find_element(By.ID, "joincode").text)
            check("the question's title is shown", driver.find_element(By.ID, "title").text == TITLE,
                  driver.find_element(By.ID, "title").text)
            check("/results.json names the kind as --json does", snapshot.get("question", {}).get("kind") == "choice",
                  f"{snapshot.get('question')}")
            howto = driver.find_element(By.ID, "howto").text
            check("the line on how to vote is the command for this question", howto == snapshot.get("howToVote")
                  and howto == f"Vote: clicker-vote {CODE} A", howto)
            labels = driver.find_element(By.ID, "results").text
            check("the option texts are shown", all(o in labels for o in OPTIONS), labels[:200])
            check("the voters counted are shown as the tally shows them", driver.find_element(By.ID, "voters").text
                  == str(status()["voters"]), driver.find_element(By.ID, "voters").text)
            printed = [t.split("\n")[0] for t in driver.execute_script(
                "return Array.from(document.querySelectorAll('#results .count')).map(e => e.innerText);")]
            check("each bar prints its count", sorted(printed) == sorted(str(n) for n in shown.values()), f"{printed}")
            source = driver.page_source
            check("no voter ID on the page", not any(v in source for v in voter_ids(voters, counted)))

            # 3. Screenshots, results showing.
            os.makedirs(IMAGES, exist_ok=True)
            screenshot(driver, 1920, 1080, False, "projector-1920.png")
            screenshot(driver, 390, 844, True, "projector-phone.png")

            # 4. Hidden through D-Bus: no bars, no counts in the DOM, none sent.
            show_counts(False)
            try:
                wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-hidden") == "true"
                           and not d.find_elements(By.CSS_SELECTOR, ".bar"))
                check("hiding through D-Bus removes the bars from the DOM", True)
            except TimeoutException:
                check("hiding through D-Bus removes the bars from the DOM", False, f"{bars(driver)}")
            check("no count is left in the DOM", not driver.find_elements(By.CSS_SELECTOR, "[data-count], #results .count"))
            check("the page says the results are hidden", driver.find_element(By.ID, "hidden").is_displayed())
            check("no download SVG link while hidden", not driver.find_element(By.ID, "download").is_displayed())
            hidden = page_json()
            check("/results.json carries no results while hidden", hidden.get("hidden") is True and "results" not in hidden,
                  json.dumps(hidden)[:300])

            # 5. Shown again: the same bars come back.
            show_counts(True)
            try:
                wait.until(lambda d: bars(d) == shown)
                check("showing them again brings the same bars back", True)
            except TimeoutException:
                check("showing them again brings the same bars back", False, f"{bars(driver)}")

            # 6. Closed: the exact counts of every ballot.
            call("CloseQuestion")
            exact = results()
            try:
                wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "closed"
                           and bars(d) == exact["counts"])
                check("closed: the bars show the exact counts of results --json", exact["counts"] == EXPECTED)
            except TimeoutException:
                check("closed: the bars show the exact counts of results --json", False, f"page {bars(driver)}, {exact}")
            check("closed: the page shows every voter", driver.find_element(By.ID, "voters").text == str(len(VOTES)))
            link = driver.find_element(By.ID, "download")
            check("the page offers a download SVG link", link.is_displayed(), link.get_attribute("outerHTML"))
            try:
                with urllib.request.urlopen(link.get_attribute("href"), timeout=10) as r:
                    linked = ET.fromstring(r.read())
                ns = "{http://www.w3.org/2000/svg}"
                linked_bars = {e.get("data-option"): int(e.get("data-count")) for e in linked.iter(ns + "rect")
                               if e.get("data-count") is not None}
                check("the downloaded SVG carries the bars the page shows", linked_bars == bars(driver), f"{linked_bars}")
            except Exception as e:  # a broken link or a malformed SVG fails the check, not the run
                check("the downloaded SVG carries the bars the page shows", False, repr(e))

            # 7. The export's chart for slides.
            out = subprocess.run([f"{BIN}/clicker-tally", "export", os.path.join(WORK, "exports")],
                                 capture_output=True, text=True, timeout=30)
            charts = [os.path.join(WORK, "exports", f) for f in sorted(os.listdir(os.path.join(WORK, "exports")))
                      if f.endswith("-q1.svg")] if out.returncode == 0 else []
            check("export writes the question's SVG chart", len(charts) == 1, out.stdout + out.stderr)
            if charts:
                svg = ET.parse(charts[0]).getroot()
                ns = "{http://www.w3.org/2000/svg}"
                chart = {r.get("data-option"): int(r.get("data-count")) for r in svg.iter(ns + "rect")
                         if r.get("class") == "bar"}
                check("the chart's bars carry the exact counts", chart == exact["counts"], f"{chart}")
                texts = [t.text for t in svg.iter(ns + "text")]
                check("the chart shows the title and the option texts", TITLE in texts and all(o in texts for o in OPTIONS),
                      f"{texts}")
        finally:
            driver.quit()
    finally:
        for p in voters:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"projector-browser: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def voter_ids(voters, counted):
    return [b["voter"] for b in (counted or {}).get("ballots", [])]


if __name__ == "__main__":
    sys.exit(main())
