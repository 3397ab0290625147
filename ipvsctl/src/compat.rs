//! compat
