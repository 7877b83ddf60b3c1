// tally tests
