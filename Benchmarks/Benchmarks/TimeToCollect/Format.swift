// Medians and table cells.

import Foundation

func median(_ xs: [Double?]) -> Double? {
    // Unreached (nil) counts as +∞.
    let sorted = xs.map { $0 ?? .infinity }.sorted()
    guard !sorted.isEmpty else { return nil }
    let m = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    return m.isFinite ? m : nil
}

func fmt(_ x: Double?, horizon: Double) -> String {
    guard let x else { return ">" + format1(horizon) }
    return format1(x)
}

func format1(_ x: Double) -> String {
    if x >= 100 { return String(Int(x.rounded())) }
    let r = (x * 100).rounded() / 100
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals == 1 { s += "0" }
    }
    return s
}

func pad(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(0, w - s.count)) + s }

func secondsOf(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) * 1e-18
}

func format4(_ x: Double) -> String {
    if x < 0.0001 { return x == 0 ? "0" : "<1e-4" }
    return String((x * 10000).rounded() / 10000)
}

func format2(_ x: Double) -> String {
    let r = Int((x * 100).rounded())
    let frac = r % 100
    return "\(r / 100)." + (frac < 10 ? "0" : "") + String(frac)
}
