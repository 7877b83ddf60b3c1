print("clicker-vote: not wired yet")
