"""What every report figure shares: text taken from data is drawn as written."""


def plain_text(text: object) -> str:
    """A label from data (a condition's display, a model name) with every `$` escaped, so matplotlib never
    reads it as mathtext: `Cost $5$` would be typeset, and a parse error there loses the whole report.
    Escaping keeps the figure code thread-safe, unlike turning mathtext off through the global rcParams."""
    return str(text).replace("$", r"\$")
