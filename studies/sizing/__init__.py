"""Sample sizing: the fewest independent clusters at which a method reaches a target power
while a false-pass certificate at that design holds.

``size`` (the search), ``analytic`` (the closed-form starting point), ``gate`` (the
false-pass side), ``curve`` (the power curve dataset and its plot), ``power_bound`` (the most
power any test valid over a null grid can have at a design).
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "size": ["SizingResult", "SizingStopped", "StepBudget", "size", "size_estimate"],
    "curve": ["plot_curve", "save_sizing", "sizing_paths"],
    "analytic": ["analytic_clusters", "design_effect"],
    "power_bound": ["PowerBound", "power_bound"],
})
