// The attention part of the C++ example (attention.cpp).
#pragma once
#include <pk/runtime.hpp>

#include <random>
#include <vector>

//! Runs a causal attention forward pass on each stream against a CPU reference; returns the number of
//! failures (printing each result).
int attention_checks(const std::vector<pk::stream>& streams, std::mt19937& gen);
