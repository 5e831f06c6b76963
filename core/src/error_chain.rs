//! An error with its causes, in one line: for a log, a status message or
//! an Event.

/// An error and its sources, one after another: "a: b: c".
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    error_chain_with(err, |e| (e.to_string(), false))
}

/// [`error_chain`] with each error said by `describe`: its text, and
/// whether that text already holds its sources (then they are not
/// followed). A source whose text the chain already holds is said once
/// (some errors print their source themselves).
pub fn error_chain_with(
    err: &(dyn std::error::Error + 'static),
    describe: impl Fn(&(dyn std::error::Error + 'static)) -> (String, bool),
) -> String {
    let (mut text, mut whole) = describe(err);
    let mut source = err.source();
    while let Some(cause) = source.filter(|_| !whole) {
        let (message, holds_sources) = describe(cause);
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        whole = holds_sources;
        source = cause.source();
    }
    text
}
