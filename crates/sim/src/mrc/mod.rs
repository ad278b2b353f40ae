//! Miss-ratio curves.
