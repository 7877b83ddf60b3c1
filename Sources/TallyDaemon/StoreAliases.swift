// ClickerStore's module and its main class share a name, so `ClickerStore.RosterEntry` cannot be
// written where ClickerTally's RosterEntry is also visible. This file imports only the store.
import ClickerStore

/// A roster row as the store keeps it.
typealias StoredRosterEntry = RosterEntry
