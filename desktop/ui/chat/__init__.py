"""The conversation view: the virtualised list of bubbles, its model and delegate, selection, find,
the jump-to-newest button, message actions and the cards for what the agent asks.
"""
