// SlotStamps (backend/sim/fabric_slot_stamps.h): a set of flow slots emptied in O(1).
#include "backend/sim/fabric_slot_stamps.h"

#include <gtest/gtest.h>

namespace megasim::backend {
namespace {

TEST(FabricSlotStamps, ClearEmptiesTheSet) {
  SlotStamps s;
  s.clear(4);
  EXPECT_FALSE(s.contains(2));
  s.insert(2);
  EXPECT_TRUE(s.contains(2));
  EXPECT_EQ(s.count(), 1u);
  s.clear(4);
  EXPECT_FALSE(s.contains(2));
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.check(), "");
}

TEST(FabricSlotStamps, InsertNewTellsASecondInsert) {
  SlotStamps s;
  s.clear(3);
  EXPECT_TRUE(s.insert_new(1));
  EXPECT_FALSE(s.insert_new(1));
  EXPECT_TRUE(s.insert_new(0));
  EXPECT_EQ(s.count(), 2u);
}

TEST(FabricSlotStamps, GrowsWithTheSlotsEmpty) {
  SlotStamps s;
  s.clear(1);
  s.insert(0);
  s.clear(3);
  for (std::uint32_t slot = 0; slot < 3; ++slot) EXPECT_FALSE(s.contains(slot));
  s.insert(2);
  EXPECT_TRUE(s.contains(2));
}

}  // namespace
}  // namespace megasim::backend
