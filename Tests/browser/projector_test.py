"""The projector page in a real browser: Debian's chromium, headless, driven by selenium through
Debian's chromedriver (/usr/bin/chromedriver, given explicitly, so selenium never downloads one).

Tests/browser/run.sh starts a private bus and a tally daemon on the simulated air with --web, then
runs this script with: BIN_DIR WORK_DIR JOIN_CODE PAGE_URL IMAGE_DIR

1. Five clicker-vote processes (each its own device key) vote A, B, B, C, and D then B (a change).
2. The page, loaded headless, shows bars whose data-count equal, option by option, the counts of
   `clicker-tally results --json` (D-Bus Results) and of /results.json; waits are WebDriverWait on
   the DOM, never a fixed sleep.
3. Screenshots at 1920x1080 and 390x844 (viewport pixels, checked in the PNG header) go to IMAGE_DIR.
4. Hiding the results through D-Bus (ShowCounts false, what the `h` key does) removes every bar and
   count from the DOM, and /results.json then carries no results.
5. Showing them again brings the same bars back.
Prints "N passed, M failed".
"""
import json
import os
import struct
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BIN, WORK, CODE, URL, IMAGES = sys.argv[1:6]
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
VOTES = [["A"], ["B"], ["B"], ["C"], ["D", "B"]]  # the last voter changes D to B
EXPECTED = {"A": 1, "B": 3, "C": 1, "D": 0}

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


def show_counts(show):
    subprocess.run(["dbus-send", "--system", "--print-reply", "--dest=org.clicker.Tally1", "/org/clicker/Tally1",
                    "org.clicker.Tally1.ShowCounts", f"boolean:{'true' if show else 'false'}"],
                   check=True, capture_output=True, timeout=20)


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
    return {e.get_attribute("data-option"): int(e.get_attribute("data-count"))
            for e in driver.find_elements(By.CSS_SELECTOR, ".bar[data-option]")}


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
        # 1. Votes from separate voter processes on the simulated air.
        for i, answers in enumerate(VOTES):
            env = dict(os.environ, XDG_STATE_HOME=os.path.join(WORK, f"voter-{i}"))
            p = subprocess.Popen([f"{BIN}/clicker-vote", "--radio", "sim", "--air", os.path.join(WORK, "air.sock"),
                                  CODE, answers[0]], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, bufsize=1)
            line = p.stdout.readline()
            check(f"voter {i} casts {answers[0]}", line.startswith(f"voting {answers[0]} "), repr(line))
            for a in answers[1:]:
                p.stdin.write(a + "\n")
                p.stdin.flush()
                line = p.stdout.readline()
                check(f"voter {i} changes to {a}", line.startswith(f"changed to {a} "), repr(line))
            voters.append(p)
        try:
            counted = until("the tally counts all five votes",
                            lambda: (r := results()) and r["counts"] == EXPECTED and r["voters"] == 5 and r)
        except TimeoutError:
            counted = None
        check("the tally counts the votes cast", counted is not None, f"last: {results()}")
        tally_counts = counted["counts"] if counted else EXPECTED

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
                wait.until(lambda d: bars(d) == tally_counts)
                check("the bars show the exact counts the tally reports", True)
            except TimeoutException:
                check("the bars show the exact counts the tally reports", False, f"page {bars(driver)}, tally {tally_counts}")
            snapshot = page_json()
            served = {b["option"]: b["count"] for b in (snapshot.get("results") or {}).get("bars", [])}
            check("/results.json carries the same counts", served == tally_counts, f"{served}")
            check("the join code is shown", driver.find_element(By.ID, "joincode").text.replace(" ", "") == CODE.replace(" ", ""),
                  driver.find_element(By.ID, "joincode").text)
            check("the voters counted are shown", driver.find_element(By.ID, "voters").text == "5",
                  driver.find_element(By.ID, "voters").text)
            printed = [e.text.split("\n")[0] for e in driver.find_elements(By.CSS_SELECTOR, "#results .count")]
            check("each bar prints its count", sorted(printed) == sorted(str(n) for n in tally_counts.values()), f"{printed}")
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
            hidden = page_json()
            check("/results.json carries no results while hidden", hidden.get("hidden") is True and "results" not in hidden,
                  json.dumps(hidden)[:300])

            # 5. Shown again: the same bars come back.
            show_counts(True)
            try:
                wait.until(lambda d: bars(d) == tally_counts)
                check("showing them again brings the same bars back", True)
            except TimeoutException:
                check("showing them again brings the same bars back", False, f"{bars(driver)}")
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
