/* Fixture: included from a layer below. */
