"""Charts for any domain that installs one.

renderer       the `ChartRenderer` interface (what to render, what comes back); the engines that
               implement it live in generator.io.helm
deterministic  render twice and pin whatever differs between the two renders
"""
