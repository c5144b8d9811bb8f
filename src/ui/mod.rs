//! What the commands show a person at a terminal while a run goes on, beside the reports:
//! the live progress line on standard error ([`progress`]). It is no report — nothing of it
//! is kept, and it is drawn only for a terminal — so it lives with the commands that draw
//! it, above the reports, whose number formatting it shares.

pub mod progress;
