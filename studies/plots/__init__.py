"""Pictures of results: a study's curves, a sequential study's looks, a qualification's
heat map, a judge-label study's pass rates by calibration size (matplotlib, written to PNG).
Every PNG carries simlab's mark (``stamp``: a PNG text key), by which a plot simlab drew is
told from a user's own PNG before it is replaced."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "study": ["plot_dataset"],
    "sequential": ["plot_sequential"],
    "qualification": ["cell_rows", "heatmap"],
    "judge": ["plot_judge_study"],
    "stamp": ["PNG_KEY", "is_simlab_png", "png_metadata", "png_text", "save_png"],
})
