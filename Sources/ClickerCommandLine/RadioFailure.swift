import ClickerSim

extension Failure {
    /// A radio that did not open, in words that say what to do about it.
    public static func radio(_ error: any Error) -> Failure {
        switch error as? AirSocketError {
        case .noAir(let path):
            return Failure("no simulated air at \(path): start `clicker-tally --radio sim` first\n"
                + "(or pass --air with the socket it hosts)")
        case .inUse(let path):
            return Failure("the simulated air at \(path) is already hosted by another clicker-tally;\n"
                + "no voter could reach this one. Stop the other one, or host another air with --air PATH")
        case nil:
            return Failure("\(error)")
        }
    }
}
