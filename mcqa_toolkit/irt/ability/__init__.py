"""Ability (theta) estimation with item parameters held fixed, one estimator per module:

    base       AbilityEstimate, the quadrature grid and prior (normal_grid), posterior moments on a grid
    eap        expected a posteriori theta and posterior SD (ability_eap)
    sum_score  EAP given only the sum score, Lord-Wingersky (ability_eap_sum_score)
    map        posterior mode under a normal prior (ability_map)
    ml         maximum likelihood (ability_ml)
    wle        Warm's weighted likelihood (ability_wle)
    solve      the bracket + Fisher-scoring root finder that map, ml and wle share
"""
from mcqa_toolkit.irt.ability.base import DEFAULT_CHUNK, AbilityEstimate, normal_grid, posterior_moments
from mcqa_toolkit.irt.ability.eap import ability_eap
from mcqa_toolkit.irt.ability.map import ability_map
from mcqa_toolkit.irt.ability.ml import ability_ml
from mcqa_toolkit.irt.ability.sum_score import ability_eap_sum_score
from mcqa_toolkit.irt.ability.wle import ability_wle

__all__ = ["DEFAULT_CHUNK", "AbilityEstimate", "normal_grid", "posterior_moments", "ability_eap",
           "ability_eap_sum_score", "ability_map", "ability_ml", "ability_wle"]
