// The poll secrets every test target shares (derived once per process).
@_exported import ClickerTestSupport
