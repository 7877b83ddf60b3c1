print("clicker-tally: not wired yet")
