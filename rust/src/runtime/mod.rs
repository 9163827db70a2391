//! Where a solve runs and how it stops: the two-thread [`team`] and the
//! interrupt [`control`].

pub mod control;
pub mod team;
