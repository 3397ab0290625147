//! vmwlch
