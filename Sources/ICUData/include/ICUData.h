// Nothing to import: the target only links the tally's ICU data in (icudata.S).
