"""Everything a user writes or picks: scenarios, algorithms and strengths, links, secure elements, devices."""
