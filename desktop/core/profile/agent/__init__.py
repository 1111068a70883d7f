"""What a profile's agent offers beyond the chat itself: slash commands and the model switch
(agent_commands), steering a running turn (steering) and the gateway's busy-input default
(busy_default). Each takes narrow ports from the controller and holds no other part."""
